package badgerdir

import (
	"syscall"
)

// verifyChildAttr: a child outliving a killed parent would keep reading the store
// for nothing, so Linux kills it with its parent.
func verifyChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
