package zkdata

import "testing"

// ForceSpill makes every open during the test read its dataDir onto disk, as
// a dataDir past spillAbove is, and fails the test if none did.
func ForceSpill(t testing.TB) {
	prev, opens := spillAbove, spillOpens.Load()
	spillAbove = -1
	t.Cleanup(func() {
		spillAbove = prev
		if spillOpens.Load() == opens {
			t.Error("no dataDir was read onto disk")
		}
	})
}

// Spilled reports whether the store s read its dataDir onto disk.
func Spilled(s any) bool {
	zs, ok := s.(*zkDataStore)
	if !ok {
		return false
	}
	_, ok = zs.tree.(*spillTree)
	return ok
}

// SetSpillAbove sets the size past which a dataDir is read onto disk; restore
// puts the default back.
func SetSpillAbove(v int64) (restore func()) {
	prev := spillAbove
	spillAbove = v
	return func() { spillAbove = prev }
}

// SetSortBudget sets the memory the sorter of a dataDir read onto disk holds.
func SetSortBudget(v int) { sortBudget = v }

// InputBytes is what decides between memory and disk.
func InputBytes(dir, logDir string) int64 { return inputBytes(dir, logDir) }
