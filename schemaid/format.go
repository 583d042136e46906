package schemaid

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
)

// String is the human form:
//
//	empty                                   no schema id
//	pulsar:v3                               registry version
//	pulsar-legacy:0x… (reason)              over-long schema_version
//	external:0x010203                       PIP-420 value id (hex; the text follows in quotes when printable)
//	kv(key=0x010203, value=0x040506)        PIP-420 key/value id (Java layout)
//	kv(key=0x01, value=0x07, layout=rust)   the same, in pulsar-rs's layout (no value length)
//	kv-legacy(key=0x…, value=0x…)           magic-less key/value id
//	confluent:42                            Confluent id
//	confluent-guid:xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
//	unknown:0x… (reason)
//
// Bytes are always shown in full hex: it is exact, and an SRE compares ids.
func (id ID) String() string {
	switch id.Kind {
	case KindEmpty:
		return "empty"
	case KindPulsarVersion:
		return "pulsar:v" + strconv.FormatInt(id.Version, 10)
	case KindPulsarVersionLegacy:
		return fmt.Sprintf("pulsar-legacy:%s (%s)", hexOf(id.Raw), id.Reason)
	case KindExternalValue:
		return "external:" + bytesText(id.Value)
	case KindExternalKV:
		if id.Layout == LayoutRust {
			return fmt.Sprintf("kv(key=%s, value=%s, layout=%s)", bytesText(id.Key), bytesText(id.Value), id.Layout)
		}
		return fmt.Sprintf("kv(key=%s, value=%s)", bytesText(id.Key), bytesText(id.Value))
	case KindLegacyKV:
		return fmt.Sprintf("kv-legacy(key=%s, value=%s)", bytesText(id.Key), bytesText(id.Value))
	case KindConfluentID:
		return "confluent:" + strconv.FormatInt(int64(id.Confluent), 10)
	case KindConfluentGUID:
		return "confluent-guid:" + guidString(id.GUID)
	case KindUnknown:
		return fmt.Sprintf("unknown:%s (%s)", hexOf(id.Raw), id.Reason)
	}
	return fmt.Sprintf("%s:%s", id.Kind, hexOf(id.Raw))
}

// MapKey is a comparable identity for counting ids in a map: the kind and the
// raw bytes, so equal bytes read under different kinds stay apart. (Key is
// taken by the key-id field.)
func (id ID) MapKey() string {
	return string(id.Kind) + ":" + hex.EncodeToString(id.Raw)
}

type jsonID struct {
	Kind        Kind     `json:"kind"`
	Version     *int64   `json:"version,omitempty"`
	KeyHex      *string  `json:"key_hex,omitempty"`
	ValueHex    *string  `json:"value_hex,omitempty"`
	Layout      KVLayout `json:"layout,omitempty"`
	ConfluentID *int32   `json:"confluent_id,omitempty"`
	GUID        string   `json:"guid,omitempty"`
	RawHex      string   `json:"raw_hex"`
	Reason      string   `json:"reason,omitempty"`
}

// MarshalJSON writes the fields that belong to the kind, in a fixed order:
// kind, version, key_hex, value_hex, layout, confluent_id, guid, raw_hex, reason.
func (id ID) MarshalJSON() ([]byte, error) {
	j := jsonID{Kind: id.Kind, RawHex: hex.EncodeToString(id.Raw), Reason: id.Reason}
	switch id.Kind {
	case KindPulsarVersion:
		j.Version = &id.Version
	case KindExternalValue:
		j.ValueHex = hexPtr(id.Value)
	case KindExternalKV, KindLegacyKV:
		j.KeyHex = hexPtr(id.Key)
		j.ValueHex = hexPtr(id.Value)
		if id.Kind == KindExternalKV {
			j.Layout = id.Layout
		}
	case KindConfluentID:
		j.ConfluentID = &id.Confluent
	case KindConfluentGUID:
		j.GUID = guidString(id.GUID)
	}
	return json.Marshal(j)
}

func hexPtr(b []byte) *string {
	s := hex.EncodeToString(b)
	return &s
}

func hexOf(b []byte) string { return "0x" + hex.EncodeToString(b) }

// bytesText is the hex of b, followed by its text in quotes when every byte
// is printable ASCII (external registries often use textual ids).
func bytesText(b []byte) string {
	if len(b) == 0 {
		return "0x"
	}
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return hexOf(b)
		}
	}
	return hexOf(b) + " " + strconv.Quote(string(b))
}

func guidString(g [16]byte) string {
	h := hex.EncodeToString(g[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
