package report

import (
	"io"
	"testing"
)

// BenchmarkRowsJSON and BenchmarkCellsJSON print the same 10,000-row table as
// JSON: from typed rows (Rows, reflection over the struct) and from cells
// (NewTable/Add, the old way). Their ratio is the cost of typed rows.
func BenchmarkRowsJSON(b *testing.B) {
	rows := make([]typedRow, 10000)
	for i := range rows {
		rows[i] = typedRow{Topic: "persistent://a/b/c", Ledgers: i, Indexed: i%2 == 0, First: Ptr(int64(i)), MS: int64(i)}
	}
	b.ReportAllocs()
	for b.Loop() {
		doc := &Document{}
		doc.Add(Rows("topics", "", rows))
		if err := Print(io.Discard, doc, true); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCellsJSON(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		t := NewTable("topics", "", "TOPIC", "topic", "LEDGERS", "ledgers", "INDEXED", "indexed", "FIRST", "first_index",
			"MS", "created_ms")
		for i := range 10000 {
			t.Add("persistent://a/b/c", i, i%2 == 0, int64(i), int64(i))
		}
		doc := &Document{}
		doc.Add(t)
		if err := Print(io.Discard, doc, true); err != nil {
			b.Fatal(err)
		}
	}
}
