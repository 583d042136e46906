package testutil

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// ZKClient is a plain go-zookeeper session, the oracle the tests read back through.
func ZKClient(t testing.TB, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogger(quietZK{}), zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.Now().Add(10 * time.Second)
	for c.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			t.Fatalf("no session with %s", addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c
}

// quietZK drops go-zookeeper's log lines.
type quietZK struct{}

func (quietZK) Printf(string, ...any) {}
