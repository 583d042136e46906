package inspect

import (
	"fmt"
	"strings"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/report"
)

// KindStoreDamaged: a file of a Badger database is damaged (a table whose blocks or
// index do not verify, a MANIFEST that does not replay or does not list the tables,
// a listed table whose file is gone). The open read around it; keys in the range
// it names may be missing, and findings about them say so.
const KindStoreDamaged = "store-damaged"

// StoreDamageFindings turns what the open of dd found damaged into findings.
func StoreDamageFindings(dd *datadir.DataDir) []report.Finding {
	var out []report.Finding
	for _, d := range dd.Damage {
		msg := d.Problem
		if d.TableID != 0 {
			msg += "; keys lost: " + d.KeyRange()
			if d.Keys > 0 {
				msg += fmt.Sprintf(" (%d keys)", d.Keys)
			}
		}
		if d.Action != "" {
			msg += "; " + d.Action
		}
		f := newFinding(KindStoreDamaged, d.File,
			"restore "+d.File+" from a backup or copy the store again from the cluster; until then findings marked store_damage may be artefacts of the damage",
			"%s", msg)
		f.Path = d.File
		out = append(out, f)
	}
	return out
}

// MarkStoreDamage notes on every finding that a store damage of dd could explain
// which damaged files those are (Finding.StoreDamage, and a line in the message).
func MarkStoreDamage(fs []report.Finding, dd *datadir.DataDir) {
	for i := range fs {
		markStoreDamage(&fs[i], dd.Damage)
	}
}

// markStoreDamage is MarkStoreDamage of one finding.
func markStoreDamage(f *report.Finding, damage []datadir.Damage) {
	if len(damage) == 0 || f.Kind == KindStoreDamaged {
		return
	}
	var files []string
	for _, d := range damage {
		if damageExplains(d, f) {
			files = append(files, d.File)
		}
	}
	if len(files) > 0 {
		f.StoreDamage = strings.Join(files, ", ")
		f.Message += " [may be caused by store damage in " + strings.Join(files, ", ") + "]"
	}
}

// damageExplains reports whether keys d may have lost could make finding f.
func damageExplains(d datadir.Damage, f *report.Finding) bool {
	if !d.RangeKnown {
		return true
	}
	if f.LedgerID != nil && d.CoversLedger(*f.LedgerID, formats.LedgerPath(*f.LedgerID)) {
		return true
	}
	if d.DB == datadir.MetadataDirName {
		for _, p := range []string{f.Path, strings.TrimPrefix(f.Location, "node ")} {
			if strings.HasPrefix(p, "/") && d.Covers([]byte(p)) {
				return true
			}
		}
		// A topic's finding may come from any node of its managed ledger.
		if f.Topic != "" {
			if t, err := formats.ParseTopic(f.Topic); err == nil && (d.Covers([]byte(t.ManagedLedgerPath())) || d.Covers([]byte(t.SchemaLocatorPath()))) {
				return true
			}
		}
	}
	return false
}
