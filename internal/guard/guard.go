// Package guard runs third-party parsers on untrusted bytes (schema definitions
// from users, compressed node bodies from a damaged store) so that a panic inside
// one becomes an error for that input instead of crashing the whole run.
//
// It is for code we do not own: our own decoders are fuzzed and must not panic.
package guard

import "fmt"

// PanicError is the error of a guarded call that panicked.
type PanicError struct {
	What  string // what was being parsed, e.g. "Avro schema"
	Value any    // what the parser panicked with
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("%s: the parser failed on this input (%v)", e.What, e.Value)
}

// Call runs fn and returns its error, or a *PanicError when fn panics. (Fatal
// runtime errors such as running out of memory cannot be recovered in Go and
// still end the process.)
func Call(what string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{What: what, Value: r}
		}
	}()
	return fn()
}

// Value is Call for a parser that returns a value.
func Value[T any](what string, fn func() (T, error)) (v T, err error) {
	err = Call(what, func() error {
		var ferr error
		v, ferr = fn()
		return ferr
	})
	return v, err
}
