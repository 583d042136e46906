//go:build ignore

// gen regenerates the etcd db samples of this folder with a real etcd server
// (Debian etcd-server 3.4.23 at /usr/bin/etcd) and records, through the client,
// the state at every revision as the expected JSON the offline reader must match.
//
//	go run testdata/etcd/gen.go            (from the repo root)
//
// deletes.db: puts, overwrites, a multi-op txn (sub revisions), deletes, a
// re-create after a delete, binary values, an empty parent key, a key that is not
// a Pulsar path. compacted.db: the same history compacted at a middle revision.
// Each db is member/snap/db copied after a clean stop; no WAL is kept (64 MB each).
package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// Expected is the JSON written beside each db.
type Expected struct {
	File            string `json:"file"`
	EtcdVersion     string `json:"etcd_version"`
	NewestRevision  int64  `json:"newest_revision"`
	CompactRevision int64  `json:"compact_revision,omitempty"`
	// NonPulsarKeys are keys not starting with "/": the reader leaves them out.
	NonPulsarKeys []string `json:"non_pulsar_keys,omitempty"`
	// Revisions: revision -> path -> node, for every readable revision.
	Revisions map[string]map[string]Node `json:"revisions"`
}

// Node is one key at one revision.
type Node struct {
	ValueHex string `json:"value_hex"`
	Version  int64  `json:"version"`
}

func main() {
	out := filepath.Join("testdata", "etcd")
	for _, compact := range []bool{false, true} {
		if err := gen(out, compact); err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
}

func gen(out string, compact bool) error {
	name := "deletes"
	if compact {
		name = "compacted"
	}
	dir, err := os.MkdirTemp("", "etcd-gen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ports := freePorts(2)
	c, p := fmt.Sprintf("http://127.0.0.1:%d", ports[0]), fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	cmd := exec.Command("/usr/bin/etcd", "--name", "s1", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", c, "--advertise-client-urls", c, "--listen-peer-urls", p,
		"--initial-advertise-peer-urls", p, "--initial-cluster", "s1="+p, "--log-level", "error")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Process.Kill()
	if err := waitHealthy(c); err != nil {
		return err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx := context.Background()
	ops := [][]clientv3.Op{
		{clientv3.OpPut("/admin/clusters/standalone", `{"serviceUrl":"http://127.0.0.1:8080"}`)},
		{clientv3.OpPut("/managed-ledgers/public/default/persistent/t1", "\x08\x01\x12\x00")},
		{clientv3.OpPut("/schemas/public/default/t1", "")},
		{clientv3.OpPut("/schemas/public/default/t1/0", "\x0a\x03abc")},
		{clientv3.OpPut("/managed-ledgers/public/default/persistent/t1", "\x08\x02\x12\x00\xff")},
		{clientv3.OpPut("/ledgers/00/0000/L0001", "ledger-1"), clientv3.OpPut("/ledgers/00/0000/L0002", "ledger-2")},
		{clientv3.OpPut("other-app/config", "not pulsar")},
		{clientv3.OpDelete("/ledgers/00/0000/L0001")},
		{clientv3.OpPut("/schemas/public/default/t1/1", "\x0a\x03def")},
		{clientv3.OpDelete("/schemas/public/default/t1/0"), clientv3.OpPut("/managed-ledgers/public/default/persistent/t1", "\x08\x03")},
		{clientv3.OpPut("/ledgers/00/0000/L0001", "ledger-1 again")},
		{clientv3.OpPut("/managed-ledgers/public/default/persistent/t1", "\x08\x04")},
	}
	var first, compactAt int64
	for i, group := range ops {
		resp, err := cli.Txn(ctx).Then(group...).Commit()
		if err != nil {
			return err
		}
		if first == 0 {
			first = resp.Header.Revision
		}
		if i == 7 {
			compactAt = resp.Header.Revision
		}
	}
	now, err := cli.Get(ctx, "/")
	if err != nil {
		return err
	}
	exp := Expected{File: name + ".db", EtcdVersion: "3.4.23", NewestRevision: now.Header.Revision, Revisions: map[string]map[string]Node{}}
	from := first
	if compact {
		if _, err := cli.Compact(ctx, compactAt, clientv3.WithCompactPhysical()); err != nil {
			return err
		}
		exp.CompactRevision, from = compactAt, compactAt
	}
	for rev := from; rev <= exp.NewestRevision; rev++ {
		resp, err := cli.Get(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithRev(rev))
		if err != nil {
			return fmt.Errorf("revision %d: %w", rev, err)
		}
		state := map[string]Node{}
		for _, kv := range resp.Kvs {
			if !strings.HasPrefix(string(kv.Key), "/") {
				if rev == exp.NewestRevision {
					exp.NonPulsarKeys = append(exp.NonPulsarKeys, string(kv.Key))
				}
				continue
			}
			state[string(kv.Key)] = Node{ValueHex: hex.EncodeToString(kv.Value), Version: kv.Version}
		}
		exp.Revisions[fmt.Sprint(rev)] = state
	}
	cli.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	_ = cmd.Wait()
	if err := copyFile(filepath.Join(dir, "data", "member", "snap", "db"), filepath.Join(out, name+".db")); err != nil {
		return err
	}
	js, err := json.MarshalIndent(exp, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, name+".json"), append(js, '\n'), 0o644)
}

func waitHealthy(endpoint string) error {
	for range 300 {
		if resp, err := http.Get(endpoint + "/health"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), `"true"`) {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("etcd on %s not healthy", endpoint)
}

func freePorts(n int) []int {
	var ports []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
