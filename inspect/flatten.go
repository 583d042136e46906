package inspect

import (
	"encoding/hex"
	"strconv"
	"unicode"
	"unicode/utf8"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ledgermedic/ledgermedic/report"
)

// flatten calls add once per set scalar field of m, naming nested fields with
// dots and list elements with [i] (ledgerInfo[0].ledgerId), in field-number order.
// Unknown fields are shown as raw hex so nothing stored is hidden.
func flatten(m protoreflect.Message, prefix string, add func(field, value string)) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		name := prefix + string(fd.Name())
		v := m.Get(fd)
		switch {
		case fd.IsList():
			l := v.List()
			for j := range l.Len() {
				flattenValue(fd, l.Get(j), name+"["+strconv.Itoa(j)+"]", add)
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				flattenValue(fd.MapValue(), mv, name+"["+k.String()+"]", add)
				return true
			})
		default:
			flattenValue(fd, v, name, add)
		}
	}
	if u := m.GetUnknown(); len(u) > 0 {
		add(prefix+"(unknown fields)", hex.EncodeToString(u))
	}
}

func flattenValue(fd protoreflect.FieldDescriptor, v protoreflect.Value, name string, add func(field, value string)) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		flatten(v.Message(), name+".", add)
	case protoreflect.BytesKind:
		add(name, bytesValue(v.Bytes()))
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			add(name, string(ev.Name()))
		} else {
			add(name, strconv.Itoa(int(v.Enum())))
		}
	case protoreflect.StringKind:
		add(name, strconv.Quote(v.String()))
	default:
		add(name, v.String())
	}
}

// bytesValue shows printable UTF-8 as a quoted string (custom metadata values)
// and anything else as hex (hashes, passwords).
func bytesValue(b []byte) string {
	if len(b) > 0 && utf8.Valid(b) {
		printable := true
		for _, r := range string(b) {
			if !unicode.IsPrint(r) {
				printable = false
				break
			}
		}
		if printable {
			return strconv.Quote(string(b))
		}
	}
	return hex.EncodeToString(b)
}

// messageObject is m as a JSON object for machines: set fields in field-number
// order by their .proto names, integers as numbers, enums by name, bytes as
// hex, nested messages as objects, repeated fields as arrays. Unknown fields
// are "(unknown fields)": hex, as flatten shows them.
func messageObject(m protoreflect.Message) *report.Object {
	o := &report.Object{}
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		v := m.Get(fd)
		switch {
		case fd.IsList():
			l := v.List()
			arr := make([]any, l.Len())
			for j := range l.Len() {
				arr[j] = jsonField(fd, l.Get(j))
			}
			o.Set(string(fd.Name()), arr)
		case fd.IsMap():
			mo := &report.Object{}
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				mo.Set(k.String(), jsonField(fd.MapValue(), mv))
				return true
			})
			o.Set(string(fd.Name()), mo)
		default:
			o.Set(string(fd.Name()), jsonField(fd, v))
		}
	}
	if u := m.GetUnknown(); len(u) > 0 {
		o.Set("(unknown fields)", hex.EncodeToString(u))
	}
	return o
}

func jsonField(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return messageObject(v.Message())
	case protoreflect.BytesKind:
		return hex.EncodeToString(v.Bytes())
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return int32(v.Enum())
	default:
		return v.Interface() // bool, string, int32/64, uint32/64, float, double
	}
}
