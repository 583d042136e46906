package app

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/fixtures"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// TestInspectCommands runs every inspect view and check through the app and
// checks what reaches stdout and the exit codes.
func TestInspectCommands(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 11}) // indexed topics without firstEntryIndex: info only
	var partitioned fixtures.ManagedLedger
	for _, ml := range m.ManagedLedgers {
		if ml.Partition >= 0 {
			partitioned = ml
			break
		}
	}
	var ledger int64 = -1
	for _, l := range m.ManagedLedgers[0].Ledgers {
		if l.Lost == "" && !l.Offloaded && !l.Open && l.Entries > 3 && ledger < 0 {
			ledger = l.ID
		}
	}

	out, errOut, code := runApp(t, "-d", dir, "--json", "inspect", "topics")
	var topics struct {
		Topics []map[string]any `json:"topics"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &topics) != nil || len(topics.Topics) != len(m.ManagedLedgers) {
		t.Fatalf("inspect topics: exit %d, %d rows for %d managed ledgers\n%s%s", code, len(topics.Topics), len(m.ManagedLedgers), out, errOut)
	}

	// The base name of a partitioned topic lists every partition, short form accepted.
	base := strings.TrimPrefix(partitioned.BaseTopic, "persistent://")
	out, errOut, code = runApp(t, "-d", dir, "inspect", "ledgers", "--topic", base)
	if code != 0 || !strings.Contains(out, partitioned.Topic) || !strings.Contains(out, "-partition-0") {
		t.Fatalf("inspect ledgers --topic %s: exit %d\n%s%s", base, code, out, errOut)
	}
	if _, errOut, code = runApp(t, "-d", dir, "inspect", "ledgers", "--topic", "public/default/no-such-topic"); code != 2 || !strings.Contains(errOut, "no-such-topic") {
		t.Errorf("unknown topic: exit %d, stderr %q", code, errOut)
	}

	out, _, code = runApp(t, "-d", dir, "inspect", "entries", "--ledger", itoa(ledger), "--limit", "2")
	if code != 0 || !strings.Contains(out, "stopped at --limit") || strings.Count(out, "\n| ") != 3 {
		t.Errorf("inspect entries --limit 2: exit %d\n%s", code, out)
	}
	if _, errOut, code = runApp(t, "-d", dir, "inspect", "entries", "--ledger", "999999"); code != 2 || !strings.Contains(errOut, "999999") {
		t.Errorf("unknown ledger: exit %d, stderr %q", code, errOut)
	}

	out, _, code = runApp(t, "-d", dir, "inspect", "schemas")
	if code != 0 || strings.Contains(out, "ledger-lost") || !strings.Contains(out, "| ok ") {
		t.Errorf("inspect schemas: exit %d\n%s", code, out)
	}

	// Informational findings only: printed, exit 0.
	out, _, code = runApp(t, "-d", dir, "check")
	if code != 0 || !strings.Contains(out, "first-entry-index-missing") {
		t.Errorf("check with info findings only: exit %d\n%s", code, out)
	}
}

// inspect node --json carries the decoded message itself, so machines need not
// re-assemble it from the flattened rows.
func TestInspectNodeJSONCarriesTheMessage(t *testing.T) {
	dir, m := testutil.Fixture(t, fixtures.Options{Seed: 9})
	s := m.Schemas[0]
	out, errOut, code := runApp(t, "-d", dir, "--json", "inspect", "node", s.LocatorPath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Node struct {
			Message struct {
				Info struct {
					Version int64 `json:"version"` // a number, not protojson's string
				} `json:"info"`
				Index []json.RawMessage `json:"index"`
			} `json:"message"`
		} `json:"node"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	last := s.Versions[len(s.Versions)-1].Version
	if msg := doc.Node.Message; msg.Info.Version != last || len(msg.Index) != len(s.Versions) {
		t.Errorf("message = %+v; want info.version %d and %d index entries", msg, last, len(s.Versions))
	}
}
