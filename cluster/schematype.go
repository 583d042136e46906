package cluster

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ledgermedic/ledgermedic/formats/schemapb"
)

// schemaTypeNames maps stored schema types to Pulsar's names for them: the Java
// SchemaType names that the admin API, pulsar-admin and capture files use
// (stored = Java + 1, docs/formats.md §5.3). The stored protobuf enum spells
// some without the underscore (KEYVALUE, PROTOBUFNATIVE, LOCALDATE): those are
// never shown.
var schemaTypeNames = map[schemapb.SchemaInfo_SchemaType]string{
	schemapb.SchemaInfo_NONE:           "NONE",
	schemapb.SchemaInfo_STRING:         "STRING",
	schemapb.SchemaInfo_JSON:           "JSON",
	schemapb.SchemaInfo_PROTOBUF:       "PROTOBUF",
	schemapb.SchemaInfo_AVRO:           "AVRO",
	schemapb.SchemaInfo_BOOLEAN:        "BOOLEAN",
	schemapb.SchemaInfo_INT8:           "INT8",
	schemapb.SchemaInfo_INT16:          "INT16",
	schemapb.SchemaInfo_INT32:          "INT32",
	schemapb.SchemaInfo_INT64:          "INT64",
	schemapb.SchemaInfo_FLOAT:          "FLOAT",
	schemapb.SchemaInfo_DOUBLE:         "DOUBLE",
	schemapb.SchemaInfo_DATE:           "DATE",
	schemapb.SchemaInfo_TIME:           "TIME",
	schemapb.SchemaInfo_TIMESTAMP:      "TIMESTAMP",
	schemapb.SchemaInfo_KEYVALUE:       "KEY_VALUE",
	schemapb.SchemaInfo_INSTANT:        "INSTANT",
	schemapb.SchemaInfo_LOCALDATE:      "LOCAL_DATE",
	schemapb.SchemaInfo_LOCALTIME:      "LOCAL_TIME",
	schemapb.SchemaInfo_LOCALDATETIME:  "LOCAL_DATE_TIME",
	schemapb.SchemaInfo_PROTOBUFNATIVE: "PROTOBUF_NATIVE",
	schemapb.SchemaInfo_EXTERNAL:       "EXTERNAL",
}

// schemaTypeByName is the reverse of schemaTypeNames, plus spellings seen in the wild.
var schemaTypeByName = func() map[string]schemapb.SchemaInfo_SchemaType {
	m := make(map[string]schemapb.SchemaInfo_SchemaType, 2*len(schemaTypeNames)+1)
	for t, n := range schemaTypeNames {
		m[n] = t
		m[strings.ReplaceAll(n, "_", "")] = t // KEYVALUE, PROTOBUFNATIVE: the stored enum names
	}
	// BYTES means "no schema"; the registry stores such a put as NONE.
	m["BYTES"] = schemapb.SchemaInfo_NONE
	return m
}()

// SchemaTypeName returns Pulsar's name of a stored schema type (KEY_VALUE, not
// the enum's KEYVALUE), or TYPE_<n> for a number this tool does not know (kept
// so it survives a capture round trip). Everything shown to a user uses it.
func SchemaTypeName(t schemapb.SchemaInfo_SchemaType) string {
	if n, ok := schemaTypeNames[t]; ok {
		return n
	}
	return "TYPE_" + strconv.Itoa(int(t))
}

// ParseSchemaType reads a schema type name in any case: Pulsar's (KEY_VALUE),
// the stored enum's (KEYVALUE), BYTES, or TYPE_<n>.
func ParseSchemaType(s string) (schemapb.SchemaInfo_SchemaType, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if t, ok := schemaTypeByName[u]; ok {
		return t, nil
	}
	if n, ok := strings.CutPrefix(u, "TYPE_"); ok {
		if v, err := strconv.ParseInt(n, 10, 32); err == nil {
			return schemapb.SchemaInfo_SchemaType(v), nil
		}
	}
	return 0, fmt.Errorf("unknown schema type %q", s)
}
