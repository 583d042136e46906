package guard

import (
	"errors"
	"strings"
	"testing"
)

func TestCallTurnsInputPanicsIntoErrors(t *testing.T) {
	cases := []struct {
		name string
		fn   func() error
		want string
	}{
		{"index", func() error { var s []int; _ = s[3]; return nil }, "index out of range"},
		{"nil map entry", func() error { var p *struct{ x int }; return errors.New(string(rune(p.x))) }, "nil pointer"},
		{"explicit panic", func() error { panic("bad union") }, "bad union"},
		{"error value", func() error { panic(errors.New("boom")) }, "boom"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Call("Avro schema", c.fn)
			var pe *PanicError
			if !errors.As(err, &pe) {
				t.Fatalf("Call = %v, want a *PanicError", err)
			}
			if !strings.HasPrefix(err.Error(), "Avro schema: ") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not name the input kind and %q", err, c.want)
			}
		})
	}
}

func TestCallPassesResultsThrough(t *testing.T) {
	want := errors.New("invalid")
	if err := Call("x", func() error { return want }); err != want {
		t.Fatalf("Call = %v, want the parser's own error", err)
	}
	v, err := Value("x", func() (int, error) { return 7, nil })
	if v != 7 || err != nil {
		t.Fatalf("Value = %d, %v", v, err)
	}
	v, err = Value("x", func() (int, error) { var s []int; return s[1], nil })
	if v != 0 || err == nil {
		t.Fatalf("Value after a panic = %d, %v; want zero and an error", v, err)
	}
}
