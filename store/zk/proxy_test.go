package zk_test

import (
	"net"
	"sync"
	"testing"
)

// testProxy listens on a free port and, for the n-th connection it accepts
// (from 0), dials target and hands both ends to pipe, which starts whatever
// copies the test needs; pipe returning false refuses the connection (both ends
// are closed). Every connection is closed at cleanup. conns counts the
// connections pipe took.
func testProxy(t testing.TB, target string, pipe func(n int, client, server net.Conn) bool) (addr string, conns func() int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var open []net.Conn
	taken := 0
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
	})
	go func() {
		for n := 0; ; n++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			open = append(open, c, s)
			mu.Unlock()
			if !pipe(n, c, s) {
				c.Close()
				s.Close()
				continue
			}
			mu.Lock()
			taken++
			mu.Unlock()
		}
	}()
	return l.Addr().String(), func() int { mu.Lock(); defer mu.Unlock(); return taken }
}
