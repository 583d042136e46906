package etcddb

import "testing"

// ForceSpill makes every open during the test read its db onto disk, as a db
// past spillAbove is, and fails the test if none did.
func ForceSpill(t testing.TB) {
	restore := SetSpillAbove(-1)
	opens := spillOpens.Load()
	t.Cleanup(func() {
		restore()
		if spillOpens.Load() == opens {
			t.Error("no db was read onto disk")
		}
	})
}

// SetSpillAbove sets the db size past which a db is read onto disk; restore
// puts the default back.
func SetSpillAbove(v int64) (restore func()) {
	prev := spillAbove
	spillAbove = v
	return func() { spillAbove = prev }
}

// SetSortBudget sets the memory the sorter of a db read onto disk holds.
func SetSortBudget(v int) { sortBudget = v }

// SetDropEvery sets how much of the db a scan reads between drops of its pages.
func SetDropEvery(v int) { dropEvery = v }

// Spilled reports whether the store s read its db onto disk.
func Spilled(s any) bool {
	db, ok := s.(*etcdDB)
	if !ok {
		return false
	}
	_, ok = db.nodes.(*spillNodes)
	return ok
}
