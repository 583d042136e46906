package formats

import (
	"testing"

	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"google.golang.org/protobuf/proto"
)

// benchMLInfo is a managed ledger as back-fill rewrites it: three ledgers (the
// last one open), the ML index property, firstEntryIndex on the closed ones.
func benchMLInfo(b *testing.B) *mlpb.ManagedLedgerInfo {
	info := new(mlpb.ManagedLedgerInfo)
	if err := proto.Unmarshal(brokerMLInfoBytes(b, 3), info); err != nil {
		b.Fatal(err)
	}
	return info
}

// BenchmarkEncodeManagedLedgerInfo is back-fill's re-encode of one node in each
// encoding (a codec's per-call setup dominates at this size, so allocations count).
func BenchmarkEncodeManagedLedgerInfo(b *testing.B) {
	info := benchMLInfo(b)
	for _, enc := range allEncodings {
		b.Run(enc.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := EncodeManagedLedgerInfo(info, enc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeManagedLedgerInfo is the decode of the same node in each encoding.
func BenchmarkDecodeManagedLedgerInfo(b *testing.B) {
	info := benchMLInfo(b)
	for _, enc := range allEncodings {
		v, err := EncodeManagedLedgerInfo(info, enc)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(enc.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := DecodeManagedLedgerInfo(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
