package report

import (
	"errors"
	"fmt"
)

// Exit codes, documented in the README and --help.
const (
	ExitClean      = 0 // nothing found, or the action succeeded
	ExitFindings   = 1 // findings (or work left unresolved)
	ExitBadInput   = 2 // bad usage or bad input
	ExitCannotOpen = 3 // could not open or could not write
	// ExitInterrupted is Ctrl-C or SIGTERM, as shells report 128+SIGINT.
	ExitInterrupted = 130
)

// ExitError carries an exit code with an error. Features return these (or wrap
// them) to say how a failure should end the process; the CLI maps them in one place.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// BadInput marks err as bad usage or bad input (exit 2).
func BadInput(err error) error { return &ExitError{Code: ExitBadInput, Err: err} }

// BadInputf is BadInput with formatting.
func BadInputf(format string, args ...any) error { return BadInput(fmt.Errorf(format, args...)) }

// CannotOpen marks err as a failure to open or write (exit 3).
func CannotOpen(err error) error { return &ExitError{Code: ExitCannotOpen, Err: err} }

// ErrFindings ends a command that printed findings with exit 1; nothing more is printed.
var ErrFindings = &ExitError{Code: ExitFindings}

// CodeOf returns the exit code an error asks for, or fallback when it names none.
func CodeOf(err error, fallback int) int {
	if err == nil {
		return ExitClean
	}
	var e *ExitError
	if errors.As(err, &e) {
		return e.Code
	}
	return fallback
}
