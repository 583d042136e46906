//go:build unix

package app

import (
	"os"

	"golang.org/x/sys/unix"
)

// terminalWidth is the width of the terminal f is, or 0 when it is none.
func terminalWidth(f *os.File) int {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
