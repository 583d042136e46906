package bgwrite

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"time"
)

// TestWriterKeepsOrder: whatever the sizes of the writes and wherever the
// flushes fall, the destination gets the same bytes in the same order.
func TestWriterKeepsOrder(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 1))
		want := make([]byte, r.IntN(6*bufSize)+1)
		for i := range want {
			want[i] = byte(r.Uint32())
		}
		var got bytes.Buffer
		w := New(&got)
		for p := want; len(p) > 0; {
			n := min(len(p), r.IntN(2*bufSize)+1)
			if r.IntN(4) == 0 {
				n = min(len(p), r.IntN(100)) // small writes too, and empty ones
			}
			if m, err := w.Write(p[:n]); m != n || err != nil {
				t.Fatalf("seed %d: Write(%d bytes) = %d, %v", seed, n, m, err)
			}
			p = p[n:]
			if r.IntN(8) == 0 {
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want[:len(want)-len(p)]) {
					t.Fatalf("seed %d: after a flush the destination holds %d bytes, not the %d written", seed, got.Len(), len(want)-len(p))
				}
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("seed %d: %d bytes written, %d arrived, or in another order", seed, len(want), got.Len())
		}
	}
}

// failAfter takes n bytes and then fails every write.
type failAfter struct {
	n     int
	got   bytes.Buffer
	calls int
}

var errDisk = errors.New("no space left on device")

func (f *failAfter) Write(p []byte) (int, error) {
	f.calls++
	if f.got.Len()+len(p) > f.n {
		return 0, errDisk
	}
	return f.got.Write(p)
}

// TestWriterReturnsFirstError: once the destination fails, later writes, Flush
// and Close say so, and nothing more is written to it.
func TestWriterReturnsFirstError(t *testing.T) {
	dst := &failAfter{n: bufSize}
	w := New(dst)
	chunk := bytes.Repeat([]byte{7}, 1000)
	var err error
	for i := 0; i < 100*bufSize/len(chunk) && err == nil; i++ {
		_, err = w.Write(chunk)
	}
	if !errors.Is(err, errDisk) {
		t.Fatalf("writes past a failed destination: %v, want %v", err, errDisk)
	}
	if err := w.Flush(); !errors.Is(err, errDisk) {
		t.Errorf("Flush: %v, want %v", err, errDisk)
	}
	if err := w.Close(); !errors.Is(err, errDisk) {
		t.Errorf("Close: %v, want %v", err, errDisk)
	}
	if dst.calls != 2 || dst.got.Len() != bufSize {
		t.Errorf("destination: %d calls, %d bytes; want 2 calls (one taken, one failed), %d bytes", dst.calls, dst.got.Len(), bufSize)
	}
	if _, err := w.Write(chunk); err != io.ErrClosedPipe {
		t.Errorf("Write after Close: %v, want %v", err, io.ErrClosedPipe)
	}
}

// blocked takes nothing until released.
type blocked struct {
	release chan struct{}
	got     bytes.Buffer
}

func (b *blocked) Write(p []byte) (int, error) {
	<-b.release
	return b.got.Write(p)
}

// TestWriterRunsAhead: while the destination is stuck in a write, the caller
// goes on writing until every buffer is full, and only then waits.
func TestWriterRunsAhead(t *testing.T) {
	dst := &blocked{release: make(chan struct{})}
	w := New(dst)
	ahead := bytes.Repeat([]byte{1}, buffers*bufSize-1) // fills every buffer but one byte
	returned := make(chan error, 1)
	go func() {
		_, err := w.Write(ahead)
		returned <- err
	}()
	select {
	case err := <-returned:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("a write of %d bytes waited for a stuck destination; %d buffers of %d should take it", len(ahead), buffers, bufSize)
	}
	more := make(chan error, 1)
	go func() {
		_, err := w.Write([]byte{2, 3})
		more <- err
	}()
	select {
	case <-more:
		t.Fatal("a write past every buffer returned while the destination was stuck")
	case <-time.After(100 * time.Millisecond):
	}
	close(dst.release)
	if err := <-more; err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if want := append(ahead, 2, 3); !bytes.Equal(dst.got.Bytes(), want) {
		t.Errorf("destination holds %d bytes, want the %d written", dst.got.Len(), len(want))
	}
}
