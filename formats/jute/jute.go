// Package jute writes and reads ZooKeeper's jute binary encoding
// (BinaryOutputArchive and BinaryInputArchive in org.apache.jute): an int32 or
// int64 big-endian, a bool one byte, a buffer or a string an int32 length (-1:
// null) and its bytes, a vector an int32 count (-1: null) and its elements. One
// writer and one reader, over bytes or a stream, for the live ZooKeeper client
// (store/zk) and ZooKeeper's files (formats/zkdisk). Standard library only.
package jute

import "encoding/binary"

// AppendInt32 appends v big-endian.
func AppendInt32(b []byte, v int32) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }

// AppendInt64 appends v big-endian.
func AppendInt64(b []byte, v int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(v)) }

// AppendBool appends v as one byte, 1 or 0.
func AppendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

// AppendBuffer appends v with its int32 length; a nil v is null (length -1), as
// BinaryOutputArchive.writeBuffer writes it.
func AppendBuffer(b, v []byte) []byte {
	if v == nil {
		return AppendInt32(b, -1)
	}
	return append(AppendInt32(b, int32(len(v))), v...)
}

// AppendString appends s with its int32 length.
func AppendString(b []byte, s string) []byte {
	return append(AppendInt32(b, int32(len(s))), s...)
}
