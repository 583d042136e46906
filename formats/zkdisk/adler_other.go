//go:build !amd64 || purego

package zkdisk

const haveAdlerAVX2 = false

func adlerAVX2(p []byte) (a, b uint64) { panic("adlerAVX2: no AVX2 code on this platform") }
