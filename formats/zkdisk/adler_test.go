package zkdisk

import (
	"bytes"
	"hash/adler32"
	"math/rand/v2"
	"testing"
)

// Property: the AVX2 path, the portable path and hash/adler32 agree on any
// bytes, any length around the 32-byte step and the chunk, any starting sum;
// all-0xff chunks drive every lane to its largest value.
func TestAdlerPathsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	lengths := []int{0, 1, 31, 32, 33, 63, 64, 65, 1000, adlerChunk - 1, adlerChunk, adlerChunk + 1, adlerChunk + 31, 3*adlerChunk + 77, 200_000}
	for _, n := range lengths {
		for _, fill := range []string{"random", "ff", "zero"} {
			b := make([]byte, n)
			switch fill {
			case "random":
				for i := range b {
					b[i] = byte(rng.IntN(256))
				}
			case "ff":
				copy(b, bytes.Repeat([]byte{0xff}, n))
			}
			want := adler32.Checksum(b)
			if got := adlerUpdate(1, b); got != want {
				t.Errorf("adlerUpdate %d bytes (%s): %#x, want %#x", n, fill, got, want)
			}
			if got := adlerSWAR(1, b); got != want {
				t.Errorf("adlerSWAR %d bytes (%s): %#x, want %#x", n, fill, got, want)
			}
			cut := rng.IntN(n + 1)
			if got := adlerUpdate(adlerSWAR(1, b[:cut]), b[cut:]); got != want {
				t.Errorf("%d bytes (%s) cut at %d: %#x, want %#x", n, fill, cut, got, want)
			}
		}
	}
	t.Logf("AVX2 path in use: %v", haveAdlerAVX2)
}

// FuzzAdler: adlerUpdate continues hash/adler32 over any split of any bytes.
func FuzzAdler(f *testing.F) {
	f.Add([]byte("ZKSN"), uint16(2))
	f.Add(bytes.Repeat([]byte{0xff}, 5000), uint16(4000))
	f.Add(bytes.Repeat([]byte{0x80, 0x7f, 0}, 12000), uint16(17))
	f.Fuzz(func(t *testing.T, b []byte, cut uint16) {
		c := int(cut) % (len(b) + 1)
		if got, want := adlerUpdate(adlerUpdate(1, b[:c]), b[c:]), adler32.Checksum(b); got != want {
			t.Fatalf("%d bytes cut at %d: %#x, want %#x", len(b), c, got, want)
		}
	})
}
