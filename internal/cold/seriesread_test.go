package cold

import (
	"cmp"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

// TestSeriesReadPages reads series from files of many small pages and
// several row groups, so that a series' rows start and end inside pages,
// runs cross page boundaries, optional columns are null on some rows and
// constant on some pages, and the reader decodes only some pages of each
// column: every read must equal what was archived, resolved, for any
// range, with the footer cache cold and warm, read at once by several
// goroutines (one pool of page readers). With a dictionary limit of a
// few values, malo_id's chunks fall back from dictionary-encoded pages to
// plain ones midway, and the reader matches both.
func TestSeriesReadPages(t *testing.T) {
	for _, plain := range []bool{false, true} {
		t.Run(map[bool]string{false: "dictionary", true: "plain"}[plain], func(t *testing.T) { testSeriesReadPages(t, plain) })
	}
}

func testSeriesReadPages(t *testing.T, plain bool) {
	e := newEnv(t, Options{RowGroupRows: 1000})
	decl := loadProfile("power")
	h := e.ensure(t, decl)
	// Pages of about a kilobyte: a hundred-odd values of a wide column.
	ice, err := e.foreign.LoadTable(t.Context(), h.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	tx := ice.NewTransaction()
	props := iceberg.Properties{table.ParquetPageSizeBytesKey: "1024"}
	if plain {
		props["write.parquet.dict-size-bytes"] = "64"
	}
	if err := tx.SetProperties(props); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}

	const meters, days = 12, 3
	var rows []series.Reading
	for i := range meters {
		rs := quarterHours(i, jan2026, days*96)
		rows = append(rows, rs...)
		if i%3 == 0 {
			// A second channel.
			for _, r := range quarterHours(i, jan2026, days*96) {
				r.Extra["channel"] = "B"
				r.Value += 5
				rows = append(rows, r)
			}
		}
		if i%4 == 1 {
			// A later version of some quarter hours, archived with the
			// first: the first is marked superseded.
			for k := 40; k < 130; k += 3 {
				r := rs[k]
				r.Version += 100
				r.Value++
				rows = append(rows, r)
			}
		}
	}
	// In primary key order, as an archival takes them.
	slices.SortStableFunc(rows, func(a, b series.Reading) int {
		return cmp.Or(strings.Compare(a.MaLo, b.MaLo), a.From.Compare(b.From),
			strings.Compare(a.Extra["channel"], b.Extra["channel"]), cmp.Compare(a.Version, b.Version))
	})
	e.archive(t, h, jan2026, jan2026.AddDate(0, 0, days), rows)

	// The fixture has teeth: files of several row groups and pages, and
	// malo_id's data pages dictionary-encoded and plain (the writer gives
	// up a dictionary that does not pay), with the dictionary limit in one
	// chunk both ways.
	encoded, mixed := map[string]bool{}, false
	for _, name := range e.files(t, ".parquet") {
		if filepath.Base(filepath.Dir(name)) == "superseded=true" {
			continue
		}
		pf, err := file.OpenParquetFile(filepath.Join(e.dir, name), false)
		if err != nil {
			t.Fatal(err)
		}
		if pf.NumRowGroups() < 2 {
			t.Errorf("%s: %d row groups, want several", name, pf.NumRowGroups())
		}
		rg, err := pf.GetPageIndexReader().RowGroup(0)
		if err != nil {
			t.Fatal(err)
		}
		for _, col := range []string{"malo_id", "value"} {
			oi, err := rg.GetOffsetIndex(pf.MetaData().Schema.ColumnIndexByName(col))
			if err != nil {
				t.Fatal(err)
			}
			if n := len(oi.GetPageLocations()); n < 2 {
				t.Errorf("%s: %s in %d pages, want several", name, col, n)
			}
		}
		for g := range pf.NumRowGroups() {
			cc, err := pf.MetaData().RowGroup(g).ColumnChunk(pf.MetaData().Schema.ColumnIndexByName("malo_id"))
			if err != nil {
				t.Fatal(err)
			}
			chunk := map[string]bool{}
			for _, st := range cc.EncodingStats() {
				encoded[st.Encoding.String()], chunk[st.Encoding.String()] = true, true
			}
			mixed = mixed || chunk["PLAIN"] && chunk["RLE_DICTIONARY"]
		}
		pf.Close()
	}
	if !encoded["RLE_DICTIONARY"] || !encoded["PLAIN"] || plain && !mixed {
		t.Errorf("malo_id's data pages are encoded %v, in a chunk both ways: %t; want both ways, in one chunk: %t", encoded, mixed, plain)
	}

	// want resolves rows by the rule of readings, as the reader must.
	want := func(m, channel string, from, to time.Time) []series.Reading {
		win := map[string]series.Reading{}
		for _, r := range rows {
			if r.MaLo != m || r.From.Before(from) || !r.From.Before(to) || channel != "" && r.Extra["channel"] != channel {
				continue
			}
			k := r.From.UTC().Format(time.RFC3339Nano) + "\x00" + r.Extra["channel"] // the merge key but malo_id and obis_code
			if w, ok := win[k]; !ok || r.Version > w.Version {
				win[k] = r
			}
		}
		var out []series.Reading
		for _, r := range win {
			out = append(out, r)
		}
		return out
	}
	day := func(d int) time.Time { return jan2026.AddDate(0, 0, d) }
	ranges := []series.Range{
		{From: day(0), To: day(days)},
		{From: day(0).Add(3*time.Hour + 15*time.Minute), To: day(1).Add(17*time.Hour + 45*time.Minute)},
		{From: day(1).Add(10 * time.Hour), To: day(1).Add(10*time.Hour + 15*time.Minute)},
		{From: day(2), To: day(3)},
		{From: day(days), To: day(days + 1)},
	}
	rd := NewSeriesReader(0, nil)
	// read reads meter i's series and says whether it is what was
	// archived; it may run in any goroutine.
	read := func(i int, channel string, q series.Range, marks bool) {
		m := malo(i)
		q.MaLo, q.OBIS = []string{m}, []string{"1-1:1.29.0"}
		p, err := e.tier.Plan(t.Context(), h, q)
		if err == nil {
			p, err = p.Local(t.Context(), nil)
		}
		if err != nil {
			t.Error(err)
			return
		}
		f := SeriesFilter{MaLo: m, OBIS: "1-1:1.29.0", From: q.From, To: q.To, Marks: marks}
		if channel != "" {
			f.Identity = map[string]string{"channel": channel}
		}
		got, err := rd.Read(t.Context(), decl, p, f)
		if err != nil {
			t.Error(err)
			return
		}
		g, w := normalize(decl, got), normalize(decl, want(m, channel, q.From, q.To))
		if !reflect.DeepEqual(g, w) {
			t.Errorf("meter %d, channel %q, %s to %s, marks %t: %d readings, want %d, or others", i, channel, q.From, q.To, marks, len(g), len(w))
		}
	}
	for pass := range 2 { // the cache cold, then warm
		for i := range meters {
			for _, q := range ranges {
				for _, marks := range []bool{true, false} {
					read(i, "", q, marks)
					if i%3 == 0 && pass == 0 {
						read(i, "B", q, marks)
					}
				}
			}
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < meters; i += 2 {
				for _, q := range ranges {
					read(i, "", q, true)
				}
			}
		})
	}
	wg.Wait()
}
