package formats

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
)

// NodeKind says what a metadata node path holds.
type NodeKind int

// Kinds of metadata nodes.
const (
	NodeOther          NodeKind = iota // anything we do not decode
	NodeManagedLedger                  // /managed-ledgers/t/ns/persistent/x: ManagedLedgerInfo
	NodeCursor                         // /managed-ledgers/t/ns/persistent/x/c: ManagedCursorInfo
	NodeSchemaLocator                  // /schemas/t/ns/x: SchemaLocator
	NodeLedgerMetadata                 // /ledgers/...: LedgerMetadataFormat
)

func (k NodeKind) String() string {
	switch k {
	case NodeManagedLedger:
		return "managed-ledger"
	case NodeCursor:
		return "cursor"
	case NodeSchemaLocator:
		return "schema-locator"
	case NodeLedgerMetadata:
		return "ledger-metadata"
	}
	return "other"
}

// ClassifyPath tells what a node path holds, by its path alone.
func ClassifyPath(p string) NodeKind {
	// The root first: every node of a walk is classified, and each parser
	// below only takes paths under its own root.
	switch {
	case strings.HasPrefix(p, ManagedLedgersRoot+"/"):
		if _, ok := ParseManagedLedgerPath(p); ok {
			return NodeManagedLedger
		}
		if _, _, ok := ParseCursorPath(p); ok {
			return NodeCursor
		}
	case strings.HasPrefix(p, SchemasRoot+"/"):
		if _, ok := ParseSchemaLocatorPath(p); ok {
			return NodeSchemaLocator
		}
	case strings.HasPrefix(p, LedgersRoot+"/"):
		if _, err := ParseLedgerPath(p); err == nil {
			return NodeLedgerMetadata
		}
	}
	return NodeOther
}

// DecodedNode is a node value decoded according to its path.
type DecodedNode struct {
	Kind     NodeKind
	Encoding string        // Encoding.String() for managed-ledger and cursor nodes, "protobuf" or "bookkeeper-v3" otherwise, "" for NodeOther
	Message  proto.Message // nil for NodeOther
}

// DecodeNode decodes a node value by the kind of its path.
func DecodeNode(path string, value []byte) (DecodedNode, error) {
	kind := ClassifyPath(path)
	d := DecodedNode{Kind: kind}
	var err error
	switch kind {
	case NodeManagedLedger:
		var enc Encoding
		d.Message, enc, err = DecodeManagedLedgerInfo(value)
		d.Encoding = enc.String()
	case NodeCursor:
		var enc Encoding
		d.Message, enc, err = DecodeManagedCursorInfo(value)
		d.Encoding = enc.String()
	case NodeSchemaLocator:
		d.Message, err = DecodeSchemaLocator(value)
		d.Encoding = "protobuf"
	case NodeLedgerMetadata:
		d.Message, err = DecodeLedgerMetadata(value)
		d.Encoding = "bookkeeper-v3"
	}
	if err != nil {
		return DecodedNode{Kind: kind}, fmt.Errorf("node %s: %w", path, err)
	}
	return d, nil
}
