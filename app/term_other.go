//go:build !unix

package app

import (
	"os"
)

// terminalWidth is 0 where the terminal cannot be asked: $COLUMNS decides.
func terminalWidth(*os.File) int { return 0 }
