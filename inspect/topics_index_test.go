package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/testutil"
)

// The managed ledger's index property is a number in JSON when it is one, and
// its stored text under another name when it is not: never a number as a string.
func TestTopicsIndexPropertyIsANumber(t *testing.T) {
	b := testutil.NewDataDir(t)
	for topic, prop := range map[string]string{"persistent://t/n/num": "104", "persistent://t/n/bad": "1e3"} {
		info := &mlpb.ManagedLedgerInfo{}
		formats.SetMLProperty(info, cluster.MLIndexProperty, prop)
		tn, err := formats.ParseTopic(topic)
		if err != nil {
			t.Fatal(err)
		}
		b.ManagedLedger(tn.ManagedLedgerPath(), info, formats.Plain)
	}
	tbl, err := Topics(context.Background(), b.Open(), "")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := report.PrintWith(&out, &report.Document{Tables: []*report.Table{tbl}}, report.Options{Format: report.FormatJSON}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Topics []map[string]any `json:"topics"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("%v: %s", err, out.Bytes())
	}
	want := map[string][2]any{
		"persistent://t/n/num": {104.0, nil},
		"persistent://t/n/bad": {nil, "1e3"},
	}
	if len(doc.Topics) != len(want) {
		t.Fatalf("topics %v, want %d", doc.Topics, len(want))
	}
	for _, row := range doc.Topics {
		w, ok := want[row["topic"].(string)]
		if !ok || row["index_property"] != w[0] || row["index_property_text"] != w[1] || row["indexed"] != true {
			t.Errorf("row %v: want index_property %v, index_property_text %v, indexed", row, w[0], w[1])
		}
	}
}
