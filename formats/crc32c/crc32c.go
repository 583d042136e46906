// Package crc32c is the one CRC-32C (Castagnoli) table of the program: Pulsar's
// entry checksum, BookKeeper's CRC32C digest, Badger's MANIFEST records, the
// mutation journal's records and the bookie index's replica hashes all use it.
// Standard library only, so the byte readers of other programs' files
// (formats/bkdisk) can use it too.
package crc32c

import "hash/crc32"

// Table is the CRC-32C table (hash/crc32 uses the CPU's instruction with it).
var Table = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC-32C of b.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, Table) }
