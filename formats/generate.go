// Package formats reads and writes the bytes Pulsar and BookKeeper keep on disk
// (docs/formats.md): protobuf messages generated from ./proto, plus the hand-written
// framing around them. It knows nothing of Badger, files or the CLI.
package formats

// Regenerate with protoc 3.21.12 (Debian bookworm protobuf-compiler) and
// protoc-gen-go v1.36.12 (go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12):
//go:generate protoc --proto_path=proto --go_out=. --go_opt=module=github.com/ledgermedic/ledgermedic/formats mldata.proto pulsarapi.proto schema.proto bookkeeper.proto bkwire.proto
