//go:build !linux

package badgerdir

import (
	"syscall"
)

// verifyChildAttr: without Linux's parent-death signal, a child whose parent was
// killed stops at the end of its current table, when its stdin reports EOF.
func verifyChildAttr() *syscall.SysProcAttr { return nil }
