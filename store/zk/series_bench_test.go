package zk_test

import (
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/ledgermedic/ledgermedic/testutil"
)

func BenchmarkLiveZKSeriesWrite(b *testing.B) {
	srv := testutil.StartZooKeeper(b, testutil.ZKOptions{SnapCount: -1})
	raw := testutil.ZKClient(b, srv.Addr)
	var paths, bare []string
	for _, root := range []string{"/ml", "/bare"} {
		if _, err := raw.Create(root, nil, 0, openACL); err != nil {
			b.Fatal(err)
		}
		for i := range testutil.SeriesBenchNodes {
			p := fmt.Sprintf("%s/tenant/ns/persistent/topic-%05d", root, i)
			if i == 0 {
				for _, d := range []string{root + "/tenant", root + "/tenant/ns", root + "/tenant/ns/persistent"} {
					if _, err := raw.Create(d, nil, 0, openACL); err != nil {
						b.Fatal(err)
					}
				}
			}
			if _, err := raw.Create(p, testutil.SeriesBenchBytes(0), 0, openACL); err != nil {
				b.Fatal(err)
			}
			if root == "/ml" {
				paths = append(paths, p)
			} else {
				bare = append(bare, p)
			}
		}
	}
	dd, _ := zkEngine(b, zkJournalDir(b), srv.Addr)
	testutil.BenchSeries(b, dd, paths, bare, func(batch []string, gen int) {
		ops := make([]any, len(batch))
		for i, p := range batch {
			ops[i] = &zk.SetDataRequest{Path: p, Data: testutil.SeriesBenchBytes(gen), Version: int32(gen - 1)}
		}
		if _, err := raw.Multi(ops...); err != nil {
			b.Fatal(err)
		}
	})
}
