//go:build amd64 && !purego

#include "textflag.h"

// Byte t of a 32-byte block weighs 32-t in the block's share of s2.
DATA adlerWeights<>+0(SB)/8, $0x191a1b1c1d1e1f20
DATA adlerWeights<>+8(SB)/8, $0x1112131415161718
DATA adlerWeights<>+16(SB)/8, $0x090a0b0c0d0e0f10
DATA adlerWeights<>+24(SB)/8, $0x0102030405060708
GLOBL adlerWeights<>(SB), RODATA|NOPTR, $32

DATA adlerOnes<>+0(SB)/8, $0x0001000100010001
DATA adlerOnes<>+8(SB)/8, $0x0001000100010001
DATA adlerOnes<>+16(SB)/8, $0x0001000100010001
DATA adlerOnes<>+24(SB)/8, $0x0001000100010001
GLOBL adlerOnes<>(SB), RODATA|NOPTR, $32

// func adlerAVX2(p []byte) (a, b uint64)
// Y0: byte sums (VPSADBW, per 8 bytes); Y1: weighted sums of each block;
// Y2: sum over blocks of Y0 before the block (each earlier block's bytes
// weigh 32 more per later block). b = hsum(Y1) + 32*hsum(Y2). With at most
// 512 blocks no 32-bit lane or lane sum overflows.
TEXT ·adlerAVX2(SB), NOSPLIT, $0-40
	MOVQ p_base+0(FP), SI
	MOVQ p_len+8(FP), CX
	SHRQ $5, CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y7, Y7, Y7
	VMOVDQU adlerWeights<>(SB), Y5
	VMOVDQU adlerOnes<>(SB), Y6
	TESTQ CX, CX
	JZ   sums

loop:
	VMOVDQU    (SI), Y3
	VPADDD     Y0, Y2, Y2
	VPSADBW    Y7, Y3, Y4
	VPADDD     Y4, Y0, Y0
	VPMADDUBSW Y5, Y3, Y4
	VPMADDWD   Y6, Y4, Y4
	VPADDD     Y4, Y1, Y1
	ADDQ       $32, SI
	DECQ       CX
	JNZ        loop

sums:
	// a = hsum(Y0)
	VEXTRACTI128 $1, Y0, X3
	VPADDD       X3, X0, X0
	VPSHUFD      $0x4e, X0, X3
	VPADDD       X3, X0, X0
	VPSHUFD      $0xb1, X0, X3
	VPADDD       X3, X0, X0
	VMOVD        X0, AX
	// hsum(Y1)
	VEXTRACTI128 $1, Y1, X3
	VPADDD       X3, X1, X1
	VPSHUFD      $0x4e, X1, X3
	VPADDD       X3, X1, X1
	VPSHUFD      $0xb1, X1, X3
	VPADDD       X3, X1, X1
	VMOVD        X1, DX
	// hsum(Y2)
	VEXTRACTI128 $1, Y2, X3
	VPADDD       X3, X2, X2
	VPSHUFD      $0x4e, X2, X3
	VPADDD       X3, X2, X2
	VPSHUFD      $0xb1, X2, X3
	VPADDD       X3, X2, X2
	VMOVD        X2, BX
	VZEROUPPER
	SHLQ $5, BX
	ADDQ DX, BX
	MOVQ AX, a+24(FP)
	MOVQ BX, b+32(FP)
	RET
