//go:build amd64 && !purego

package zkdisk

import (
	"golang.org/x/sys/cpu"
)

// haveAdlerAVX2: the seals' Adler-32 runs 32 bytes per step in AVX2 registers
// (adler_amd64.s), several times the portable code's speed.
var haveAdlerAVX2 = cpu.X86.HasAVX2

// adlerAVX2 returns, for p (a multiple of 32 bytes, at most adlerChunk), the
// sum of its bytes and the sum of each byte weighted by len(p) minus its index.
//
//go:noescape
func adlerAVX2(p []byte) (a, b uint64)
