package repair

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
	"github.com/ledgermedic/ledgermedic/internal/bgwrite"
)

// Definition encodings of a capture record.
const (
	EncodingText   = "text"
	EncodingBase64 = "base64"
)

// CaptureRecord is one line of a capture file: one version of one schema key,
// everything needed to rebuild its SchemaInfo exactly.
type CaptureRecord struct {
	SchemaKey          string     `json:"schema_key"`
	Version            int64      `json:"version"`
	Type               string     `json:"type"`
	Definition         string     `json:"definition"`
	DefinitionEncoding string     `json:"definition_encoding"`
	Properties         Properties `json:"properties"`
	Timestamp          int64      `json:"timestamp"`
	User               string     `json:"user"`
	Deleted            bool       `json:"deleted"`
	Hash               string     `json:"hash"` // hex SHA-256 of the definition bytes
	LedgerID           int64      `json:"ledger_id"`
	EntryID            int64      `json:"entry_id"`
	CapturedAt         string     `json:"captured_at"`
}

// Skipped is a version Capture could not read.
type Skipped struct {
	SchemaKey string
	Version   int64 // -1 when the whole locator is unreadable
	Reason    string
}

// CaptureStats says what Capture wrote and what it could not read. The versions
// it could not read are kept on disk (skippedList) until Close.
type CaptureStats struct {
	SchemaKeys int
	Written    int
	Skipped    int
	skipped    *skippedList
}

func (st *CaptureStats) skip(s Skipped) error {
	if st.skipped == nil {
		st.skipped = &skippedList{}
	}
	if err := st.skipped.add(s); err != nil {
		return fmt.Errorf("keep skipped version %s %d: %w", s.SchemaKey, s.Version, err)
	}
	st.Skipped++
	return nil
}

// EachSkipped calls fn with every version Capture could not read, in the order
// met.
func (st *CaptureStats) EachSkipped(ctx context.Context, fn func(Skipped) error) error {
	return st.skipped.each(ctx, fn)
}

// Close removes what the stats kept on disk.
func (st *CaptureStats) Close() error { return st.skipped.close() }

// Capture writes every readable version of every schema key (only keyFilter's,
// a schema key like tenant/ns/topic, when not empty) to w as JSON Lines, one
// CaptureRecord per (schema key, version), in locator path and version order.
// Unreadable versions are skipped and listed in the stats; the caller closes them.
func Capture(ctx context.Context, dd *datadir.DataDir, keyFilter string, w io.Writer) (CaptureStats, error) {
	var st CaptureStats
	bw := bgwrite.New(w) // a capture of a big cluster is gigabytes: written from another goroutine
	defer bw.Close()
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	now := time.Now().UTC().Format(time.RFC3339)
	err := scanLocators(ctx, dd, keyFilter, func(lv *locatorView) error {
		st.SchemaKeys++
		if lv.DecodeErr != nil {
			return st.skip(Skipped{lv.Key, -1, fmt.Sprintf("locator %s: %v", lv.Path, lv.DecodeErr)})
		}
		return readVersions(ctx, dd, lv, func(ie *schemapb.IndexEntry, sv storedVersion) error {
			if sv.Info == nil {
				return st.skip(Skipped{lv.Key, ie.GetVersion(), fmt.Sprintf("%s: %s", sv.State, sv.Reason)})
			}
			rec := recordOf(lv.Key, ie, sv.Info, now)
			if err := enc.Encode(rec); err != nil {
				return fmt.Errorf("write capture record %s version %d: %w", lv.Key, ie.GetVersion(), err)
			}
			st.Written++
			return nil
		})
	})
	if err != nil {
		return st, err
	}
	if err := bw.Flush(); err != nil {
		return st, fmt.Errorf("write capture: %w", err)
	}
	return st, nil
}

// recordOf turns a stored SchemaInfo into a capture record.
func recordOf(key string, ie *schemapb.IndexEntry, info *schemapb.SchemaInfo, capturedAt string) CaptureRecord {
	def := info.GetSchema()
	rec := CaptureRecord{
		SchemaKey:  key,
		Version:    ie.GetVersion(),
		Type:       cluster.SchemaTypeName(info.GetType()),
		Properties: propsFromInfo(info.GetProps()),
		Timestamp:  info.GetTimestamp(),
		User:       info.GetUser(),
		Deleted:    info.GetDeleted(),
		Hash:       hex.EncodeToString(formats.SchemaHash(def)),
		LedgerID:   ie.GetPosition().GetLedgerId(),
		EntryID:    ie.GetPosition().GetEntryId(),
		CapturedAt: capturedAt,
	}
	if isTextType(info.GetType()) && utf8.Valid(def) {
		rec.Definition, rec.DefinitionEncoding = string(def), EncodingText
	} else {
		rec.Definition, rec.DefinitionEncoding = base64.StdEncoding.EncodeToString(def), EncodingBase64
	}
	return rec
}
