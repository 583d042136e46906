//go:build !linux

package badgerdir

// Elsewhere table mappings are left to the kernel (trim.go).
const trimSupported = false

func residentFileBytes() (int64, bool) { return 0, false }

type mapRange struct{}

func tableMappings(map[string]bool) ([]mapRange, error) { return nil, nil }

func dropRanges([]mapRange) (int64, error) { return 0, nil }

func reclaimTableMappings(map[string]bool) (int64, error) { return 0, nil }
