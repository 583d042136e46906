package zkdisk

// Hooks for the external tests (package zkdisk_test imports testutil,
// which imports store, which imports this package).

type FileAt struct {
	Path string
	Zxid int64
}

func ListDir(dir string) (snaps, logs []FileAt, err error) {
	s, l, err := listDir(dir)
	conv := func(in []fileAt) []FileAt {
		out := make([]FileAt, len(in))
		for i, f := range in {
			out[i] = FileAt{f.path, f.zxid}
		}
		return out
	}
	return conv(s), conv(l), err
}

func TxnType(r Record) int32 { return r.txnType() }
