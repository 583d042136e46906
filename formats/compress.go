package formats

import (
	"bytes"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/golang/snappy"
	kzlib "github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
	"github.com/ledgermedic/ledgermedic/internal/guard"
	"github.com/pierrec/lz4/v4"
)

// MaxUncompressedSize caps the size a compressed header may declare, so a
// corrupt header cannot make us allocate gigabytes.
const MaxUncompressedSize = 256 << 20

// Pulsar uses the same codecs, with the same numbers, for managed-ledger
// metadata (mlpb) and message payloads (pulsarpb); both map onto these.
const (
	codecNone   = 0
	codecLZ4    = 1
	codecZLIB   = 2
	codecZSTD   = 3
	codecSNAPPY = 4
)

var (
	zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
		return zstd.NewReader(nil, zstd.WithDecoderMaxMemory(MaxUncompressedSize))
	})
	// Writers take their fastest level: any level decodes the same in Pulsar's
	// codecs, the broker compresses the node again at its own level on its next
	// write, and back-fill re-encodes every managed ledger it changes
	// (docs/benchmarks.md, "Measured decisions").
	zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
		return zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	})
)

// compress encodes src with codec in a form Pulsar's CompressionCodec classes
// read: LZ4 raw block, zlib stream, zstd frame, snappy raw block. (Pulsar's
// own zlib streams end with a sync flush; a finished stream reads the same.)
func compress(codec int32, src []byte) ([]byte, error) {
	if codec == codecNone {
		return bytes.Clone(src), nil
	}
	return appendCompressed(nil, codec, src)
}

// appendCompressed appends src compressed with codec to dst. The codecs' state
// is reused (pooled): setting up a fresh LZ4 table or zlib compressor costs far
// more than compressing a managed-ledger node, and reuse changes no output byte.
func appendCompressed(dst []byte, codec int32, src []byte) ([]byte, error) {
	switch codec {
	case codecNone:
		return append(dst, src...), nil
	case codecLZ4:
		c := lz4Compressors.Get().(*lz4.Compressor)
		defer lz4Compressors.Put(c)
		at := len(dst)
		dst = slices.Grow(dst, lz4.CompressBlockBound(len(src)))
		n, err := c.CompressBlock(src, dst[at:cap(dst)])
		if err != nil {
			return nil, fmt.Errorf("lz4: %w", err)
		}
		return dst[:at+n], nil
	case codecZLIB:
		z := getDeflater()
		defer z.release()
		z.out.b = dst
		if _, err := z.zw.Write(src); err != nil {
			return nil, fmt.Errorf("zlib: %w", err)
		}
		if err := z.zw.Close(); err != nil {
			return nil, fmt.Errorf("zlib: %w", err)
		}
		return z.out.b, nil
	case codecZSTD:
		enc, err := zstdEncoder()
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return enc.EncodeAll(src, dst), nil
	case codecSNAPPY:
		bound := snappy.MaxEncodedLen(len(src))
		if bound < 0 {
			return nil, fmt.Errorf("snappy: %w", snappy.ErrTooLarge)
		}
		at := len(dst)
		dst = slices.Grow(dst, bound)
		out := snappy.Encode(dst[at:cap(dst)], src) // within dst: its length suffices
		return dst[:at+len(out)], nil
	}
	return nil, fmt.Errorf("unknown compression type %d", codec)
}

// lz4Compressors hold LZ4 hash tables (a Compressor is 136 KiB; CompressBlock
// starts each block with a clean table).
var lz4Compressors = sync.Pool{New: func() any { return new(lz4.Compressor) }}

// deflater is a zlib writer kept for reuse: a fresh one allocates about 800 KB.
// klauspost's writer at BestSpeed, not the standard library's at its default
// level: that one clears 640 KB of hash tables on every Reset, 30 µs for a node of
// a few hundred bytes (8 µs here). Reading stays with compress/zlib.
type deflater struct {
	out appender
	zw  *kzlib.Writer
}

// appender is an io.Writer that appends to b.
type appender struct{ b []byte }

func (a *appender) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

var deflaters sync.Pool // of *deflater

func newZlibWriter(w io.Writer) *kzlib.Writer {
	zw, _ := kzlib.NewWriterLevel(w, kzlib.BestSpeed) // a valid level: never fails
	return zw
}

func getDeflater() *deflater {
	z, _ := deflaters.Get().(*deflater)
	if z == nil {
		z = new(deflater)
		z.zw = newZlibWriter(&z.out)
		return z
	}
	// Reset makes the writer as NewWriter left it: the same bytes come out.
	z.zw.Reset(&z.out)
	return z
}

// release returns z to the pool without a reference to its output.
func (z *deflater) release() {
	z.out.b = nil
	deflaters.Put(z)
}

// decompress decodes src and insists on exactly size bytes of output. Sizes a
// codec could not reach from len(src) bytes are rejected before allocating.
func decompress(codec int32, src []byte, size int) ([]byte, error) {
	// The codecs are third-party code fed with bytes from a possibly damaged store.
	return guard.Value(decoderName(codec), func() ([]byte, error) {
		return decompressUnguarded(codec, src, size)
	})
}

func decompressUnguarded(codec int32, src []byte, size int) ([]byte, error) {
	if size < 0 || size > MaxUncompressedSize {
		return nil, fmt.Errorf("uncompressed size %d out of range [0, %d]", size, MaxUncompressedSize)
	}
	var out []byte
	switch codec {
	case codecNone:
		out = src
	case codecLZ4:
		// An LZ4 sequence expands at most ~255x.
		if size > 256*len(src)+64 {
			return nil, fmt.Errorf("lz4: uncompressed size %d impossible from %d bytes", size, len(src))
		}
		out = make([]byte, size)
		n, err := lz4.UncompressBlock(src, out)
		if err != nil {
			return nil, fmt.Errorf("lz4: %w", err)
		}
		out = out[:n]
	case codecZLIB:
		var err error
		if out, err = inflate(src, size); err != nil {
			return nil, err
		}
	case codecZSTD:
		var h zstd.Header
		if err := h.Decode(src); err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		if h.HasFCS && h.FrameContentSize != uint64(size) {
			return nil, fmt.Errorf("zstd: frame holds %d bytes, header says %d", h.FrameContentSize, size)
		}
		dec, err := zstdDecoder()
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		out, err = dec.DecodeAll(src, nil)
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
	case codecSNAPPY:
		n, err := snappy.DecodedLen(src)
		if err != nil {
			return nil, fmt.Errorf("snappy: %w", err)
		}
		if n != size {
			return nil, fmt.Errorf("snappy: block holds %d bytes, header says %d", n, size)
		}
		// A snappy copy op emits at most 64 bytes from 2-3 input bytes.
		if size > 32*len(src)+64 {
			return nil, fmt.Errorf("snappy: uncompressed size %d impossible from %d bytes", size, len(src))
		}
		out, err = snappy.Decode(nil, src)
		if err != nil {
			return nil, fmt.Errorf("snappy: %w", err)
		}
	default:
		return nil, fmt.Errorf("unknown compression type %d", codec)
	}
	if len(out) != size {
		return nil, fmt.Errorf("uncompressed %d bytes, header says %d", len(out), size)
	}
	return out, nil
}

// inflate reads a zlib stream that must hold exactly size bytes. Pulsar's
// CompressionCodecZLib deflates with SYNC_FLUSH and never finishes the stream
// (no final block, no adler32 trailer), so input running out right after size
// bytes is the normal end; a stream that does end must carry a valid trailer.
func inflate(src []byte, size int) ([]byte, error) {
	if len(src) == 0 && size == 0 {
		// Pulsar's encode loop writes nothing at all for empty input.
		return []byte{}, nil
	}
	z, err := getInflater(src)
	if err != nil {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	defer z.release()
	r := z.zr
	// ReadAll grows with the real output, so a corrupt size cannot allocate.
	out, err := io.ReadAll(io.LimitReader(r, int64(size)))
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	if len(out) < size {
		return nil, fmt.Errorf("zlib: stream ends after %d bytes, header says %d", len(out), size)
	}
	var extra [1]byte
	n, err := r.Read(extra[:])
	if n > 0 {
		return nil, fmt.Errorf("zlib: stream holds more than the %d bytes the header says", size)
	}
	if err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("zlib: %w", err)
	}
	return out, nil
}

// inflater is a zlib reader kept for reuse: a fresh one allocates and zeroes a
// 32 KiB window, which costs more than inflating a managed-ledger node.
type inflater struct {
	src *bytes.Reader
	zr  io.ReadCloser
}

var inflaters sync.Pool // of *inflater

// getInflater returns a zlib reader of src whose header has been read.
func getInflater(src []byte) (*inflater, error) {
	z, _ := inflaters.Get().(*inflater)
	if z == nil {
		z = &inflater{src: bytes.NewReader(src)}
		zr, err := zlib.NewReader(z.src)
		if err != nil {
			return nil, err
		}
		z.zr = zr
		return z, nil
	}
	z.src.Reset(src)
	if err := z.zr.(zlib.Resetter).Reset(z.src, nil); err != nil {
		z.release()
		return nil, err
	}
	return z, nil
}

// release returns z to the pool without a reference to its input. Reset
// rebuilds the whole reader state, so any state it is left in is fine.
func (z *inflater) release() {
	z.src.Reset(nil)
	inflaters.Put(z)
}

// CompressPayload compresses a message payload with the codec named in
// MessageMetadata.compression.
func CompressPayload(codec pulsarpb.CompressionType, payload []byte) ([]byte, error) {
	return compress(int32(codec), payload)
}

// DecompressPayload undoes CompressPayload; size is
// MessageMetadata.uncompressed_size. For NONE the payload is returned as is.
func DecompressPayload(codec pulsarpb.CompressionType, payload []byte, size int) ([]byte, error) {
	if codec == pulsarpb.CompressionType_NONE {
		return payload, nil
	}
	return decompress(int32(codec), payload, size)
}

// decoderNames names each known codec's decoder for guard, built once: the
// name is needed on every call, and a panic almost never.
var decoderNames = func() map[int32]string {
	m := map[int32]string{}
	for c := range mlpb.CompressionType_name {
		m[c] = codecName(mlpb.CompressionType(c)) + " decoder"
	}
	return m
}()

func decoderName(codec int32) string {
	if name, ok := decoderNames[codec]; ok {
		return name
	}
	return codecName(mlpb.CompressionType(codec)) + " decoder"
}

// codecName is the lower-case name used in Encoding.String.
func codecName(c mlpb.CompressionType) string {
	switch c {
	case mlpb.CompressionType_NONE:
		return "none"
	case mlpb.CompressionType_LZ4:
		return "lz4"
	case mlpb.CompressionType_ZLIB:
		return "zlib"
	case mlpb.CompressionType_ZSTD:
		return "zstd"
	case mlpb.CompressionType_SNAPPY:
		return "snappy"
	}
	return fmt.Sprintf("codec(%d)", int32(c))
}
