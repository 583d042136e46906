package repair

import (
	"context"
	"fmt"
	"math"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/bkpb"
	"github.com/ledgermedic/ledgermedic/store"
)

// ledgerUniverse is what Plan learns about ledgers from one pass over the data dir.
type ledgerUniverse struct {
	// MaxID is the highest ledger id that appears anywhere, -1 when none does.
	MaxID int64
	// Template is the ledger metadata new schema ledgers copy their ensemble and
	// quorum sizes from; TemplateID names its ledger, -1 when none was found.
	Template   *bkpb.LedgerMetadataFormat
	TemplateID int64
	// templateIsSchema: the template is a schema ledger (preferred).
	templateIsSchema bool
	// Warnings: nodes whose ledger ids could not be read.
	Warnings []string
	// live is set when new ledgers go to live bookies (bookies.go).
	live *liveBookies
}

// scanLedgerIDs finds the highest ledger id used anywhere in the data dir: every
// /ledgers/ node, every ledger with entries, every LedgerInfo and terminated
// position of every managed ledger, every cursor's cursorsLedgerId, mark-delete,
// deleted-range and batch-deletion positions, and every IndexEntry of every schema locator (lost
// ledgers are still named there). A new ledger id is this plus one, so it can
// collide with nothing, not even the id of a ledger that was lost.
func scanLedgerIDs(ctx context.Context, dd *datadir.DataDir) (*ledgerUniverse, error) {
	u := &ledgerUniverse{MaxID: -1, TemplateID: -1}
	see := func(id int64) { u.MaxID = max(u.MaxID, id) }
	err := cluster.WalkNodes(ctx, dd.Metadata, "/", func(n store.Node) error {
		switch formats.ClassifyPath(n.Path) {
		case formats.NodeLedgerMetadata:
			id, _ := formats.ParseLedgerPath(n.Path)
			see(id)
			u.considerTemplate(id, n.Value)
		case formats.NodeManagedLedger:
			info, _, err := formats.DecodeManagedLedgerInfo(n.Value)
			if err != nil {
				u.warnUnreadable(n.Path, err)
				return nil
			}
			for _, li := range info.GetLedgerInfo() {
				see(li.GetLedgerId())
			}
			see(info.GetTerminatedPosition().GetLedgerId())
		case formats.NodeCursor:
			ci, _, err := formats.DecodeManagedCursorInfo(n.Value)
			if err != nil {
				u.warnUnreadable(n.Path, err)
				return nil
			}
			see(ci.GetCursorsLedgerId())
			see(ci.GetMarkDeleteLedgerId())
			for _, r := range ci.GetIndividualDeletedMessages() {
				see(r.GetLowerEndpoint().GetLedgerId())
				see(r.GetUpperEndpoint().GetLedgerId())
			}
			for _, b := range ci.GetBatchedEntryDeletionIndexInfo() {
				see(b.GetPosition().GetLedgerId())
			}
		case formats.NodeSchemaLocator:
			loc, err := formats.DecodeSchemaLocator(n.Value)
			if err != nil {
				u.warnUnreadable(n.Path, err)
				return nil
			}
			see(loc.GetInfo().GetPosition().GetLedgerId())
			for _, ie := range loc.GetIndex() {
				see(ie.GetPosition().GetLedgerId())
			}
		}
		return nil
	}, func(te *store.TruncatedError) error {
		// A damaged value still has its key: a ledger node's names its id.
		if id, err := formats.ParseLedgerPath(te.Path); err == nil {
			see(id)
		} else if k := formats.ClassifyPath(te.Path); k == formats.NodeManagedLedger || k == formats.NodeCursor || k == formats.NodeSchemaLocator {
			u.warnUnreadable(te.Path, te)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan metadata for ledger ids: %w", err)
	}
	err = dd.Ledgers.LedgerIDs(ctx, func(id int64, _ int64) error {
		see(id)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan ledger store for ledger ids: %w", err)
	}
	return u, nil
}

func (u *ledgerUniverse) warnUnreadable(path string, err error) {
	u.Warnings = append(u.Warnings, fmt.Sprintf("%s cannot be decoded (%v): ledger ids it names are unknown; "+
		"new ids are still above every id seen elsewhere", path, err))
}

// considerTemplate keeps the newest schema ledger's metadata, or failing any, the
// newest ledger's: Pulsar creates schema ledgers with the same
// managedLedgerDefault{Ensemble,WriteQuorum,AckQuorum} sizes as topic ledgers.
func (u *ledgerUniverse) considerTemplate(id int64, value []byte) {
	md, err := formats.DecodeLedgerMetadata(value)
	if err != nil || len(md.GetSegment()) == 0 || len(md.GetSegment()[0].GetEnsembleMember()) == 0 {
		return
	}
	component, _ := formats.CustomMetadata(md, cluster.CustomComponent)
	isSchema := component == cluster.ComponentSchema
	switch {
	case u.Template == nil, isSchema && !u.templateIsSchema, isSchema == u.templateIsSchema && id > u.TemplateID:
		u.Template, u.TemplateID, u.templateIsSchema = md, id, isSchema
	}
}

// placeholderBookie stands in for an ensemble member when the data dir names no
// bookie at all; BookKeeper reads only need the entry, which the ledger store has.
const placeholderBookie = "ledgermedic-restored:3181"

// newSchemaLedgerMetadata builds the /ledgers/... node of a restored schema ledger
// holding one entry of length bytes: closed, last entry 0, empty password, and the
// custom metadata BookkeeperSchemaStorage writes. BookkeeperSchemaStorage creates
// and opens schema ledgers with managedLedgerDigestType, as the broker does topic
// ledgers, so the digest type is the template's (CRC32C, the default, without one):
// a BookKeeper client opening with that type refuses a ledger of another.
func (u *ledgerUniverse) newSchemaLedgerMetadata(key string, length int64, ctimeMillis int64) *bkpb.LedgerMetadataFormat {
	ensemble, write, ack := int32(1), int32(1), int32(1)
	members := []string{placeholderBookie}
	digest := bkpb.LedgerMetadataFormat_CRC32C
	if t := u.Template; t != nil {
		if t.DigestType != nil {
			digest = t.GetDigestType()
		}
		members = append([]string(nil), t.GetSegment()[0].GetEnsembleMember()...)
		ensemble, write, ack = t.GetEnsembleSize(), t.GetQuorumSize(), t.GetAckQuorumSize()
		if int(ensemble) != len(members) || ensemble <= 0 {
			ensemble = int32(len(members))
		}
		write = clampQuorum(write, ensemble)
		if ack <= 0 {
			ack = write
		}
		ack = clampQuorum(ack, write)
	}
	return schemaLedgerMetadata(key, members, ensemble, write, ack, digest, length, ctimeMillis)
}

// schemaLedgerMetadata is the closed one-entry metadata of a restored schema
// ledger: empty password (BookkeeperSchemaStorage's), last entry 0, and the
// custom metadata BookkeeperSchemaStorage writes.
func schemaLedgerMetadata(key string, members []string, ensemble, write, ack int32,
	digest bkpb.LedgerMetadataFormat_DigestType, length, ctimeMillis int64) *bkpb.LedgerMetadataFormat {
	md := &bkpb.LedgerMetadataFormat{
		QuorumSize:    ptr(write),
		EnsembleSize:  ptr(ensemble),
		Length:        ptr(length),
		LastEntryId:   ptr(int64(0)),
		State:         bkpb.LedgerMetadataFormat_CLOSED.Enum(),
		Segment:       []*bkpb.LedgerMetadataFormat_Segment{{EnsembleMember: members, FirstEntryId: ptr(int64(0))}},
		DigestType:    digest.Enum(),
		Password:      []byte{},
		AckQuorumSize: ptr(ack),
		Ctime:         ptr(ctimeMillis),
	}
	formats.SetCustomMetadata(md, "application", "pulsar")
	formats.SetCustomMetadata(md, cluster.CustomComponent, cluster.ComponentSchema)
	formats.SetCustomMetadata(md, cluster.CustomSchemaID, key)
	return md
}

func clampQuorum(q, limit int32) int32 {
	if q <= 0 || q > limit {
		return limit
	}
	return q
}

// templateNote says where new ledgers' sizes and bookies come from.
func (u *ledgerUniverse) templateNote() string {
	switch {
	case u.live != nil && u.templateIsSchema:
		return fmt.Sprintf("new ledgers copy ensemble, quorum sizes and digest type from schema ledger %d; their bookies are writable ones from the registry", u.TemplateID)
	case u.live != nil:
		return fmt.Sprintf("no schema ledger is left: new ledgers get Pulsar's defaults, ensemble/write/ack %d/%d/%d and digest CRC32C, on writable bookies from the registry",
			pulsarEnsemble, pulsarWriteQuorum, pulsarAckQuorum)
	case u.Template == nil:
		return fmt.Sprintf("no ledger node names a bookie: new ledgers get ensemble/write/ack 1/1/1, digest CRC32C and member %s", placeholderBookie)
	case u.templateIsSchema:
		return fmt.Sprintf("new ledgers copy ensemble, quorum sizes, digest type and bookies from schema ledger %d", u.TemplateID)
	}
	return fmt.Sprintf("no schema ledger is left: new ledgers copy ensemble, quorum sizes, digest type and bookies from ledger %d "+
		"(Pulsar uses the same managedLedgerDefault* sizes and managedLedgerDigestType for schema and topic ledgers)", u.TemplateID)
}

// nextID hands out ledger ids above MaxID, or, for live bookies at --apply,
// ids from the cluster's generator.
func (u *ledgerUniverse) nextID() (int64, error) {
	if u.live != nil && u.live.takeIDs {
		return u.live.bw.NewLedgerID(u.live.ctx)
	}
	if u.MaxID == math.MaxInt64 {
		return 0, fmt.Errorf("no ledger id left above %d", u.MaxID)
	}
	u.MaxID++
	return u.MaxID, nil
}
