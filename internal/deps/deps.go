// Package deps pins the module's dependencies while packages are being written.
package deps

import (
	_ "github.com/dgraph-io/badger/v4"
	_ "github.com/golang/snappy"
	_ "github.com/hamba/avro/v2"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/mattn/go-isatty"
	_ "github.com/olekukonko/tablewriter"
	_ "github.com/pierrec/lz4/v4"
	_ "github.com/urfave/cli/v2"
	_ "google.golang.org/protobuf/proto"
)
