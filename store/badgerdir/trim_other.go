//go:build !linux

package badgerdir

// Elsewhere table mappings are left to the kernel (trim.go).
const trimSupported = false

func residentFileBytes() (int64, bool) { return 0, false }

func dropTableMappings(map[string]bool) (int64, error) { return 0, nil }

func reclaimTableMappings(map[string]bool) (int64, error) { return 0, nil }
