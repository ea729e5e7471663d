package store

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"

	"github.com/meterstore/meterstore/metering"
)

// TestTypedPagesAgainstSQL: the typed read, which selects a series' cold
// rows on the encoded values of malo_id and obis_code, answers what SQL
// over readings answers for every series of files whose pages many series
// share: malo_id's chunks of several pages, dictionary-encoded pages and
// plain ones (a dictionary limit of a few values), obis_code mixed within
// pages, quality mixed within pages, and later versions archived with
// the first. A row of another
// series leaking in, or one of the series dropped, fails it.
func TestTypedPagesAgainstSQL(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	s := e.open(t, Options{Cold: ColdOptions{RowGroupRows: 1000}})
	ice, err := e.cat.LoadTable(ctx, icetable.Identifier{"meterstore", "power"})
	if err != nil {
		t.Fatal(err)
	}
	tx := ice.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{icetable.ParquetPageSizeBytesKey: "1024", "write.parquet.dict-size-bytes": "64"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.CreatePartitions(ctx, dayN(0), dayN(5)); err != nil {
		t.Fatal(err)
	}
	const meters, days = 16, 3
	obis := []string{"1-1:1.29.0", "1-1:2.29.0"}
	for i := range meters {
		var rs []Reading
		for d := range days {
			for slot := range 96 {
				r := qh(i, d, slot, "A", 1, int64(100_000*i+1000*d+slot))
				if (slot+i)%5 == 0 {
					r.Quality = metering.Substitute
				}
				rs = append(rs, r)
				if i%3 == 0 {
					rs = append(rs, qh(i, d, slot, "B", 1, int64(7+slot)))
				}
				if i%4 == 1 {
					o := qh(i, d, slot, "A", 1, int64(-slot))
					o.OBIS = obis[1]
					rs = append(rs, o)
				}
			}
		}
		mustWrite(t, s, rs)
		if i%5 == 2 { // later versions, archived with the first
			var later []Reading
			for slot := 10; slot < 60; slot += 7 {
				later = append(later, qh(i, 1, slot, "A", 2, int64(900_000+slot)))
			}
			mustWrite(t, s, later)
		}
	}
	if out, err := s.Archive(ctx, "power", dayN(days+2)); err != nil || !out.Watermark.Equal(dayN(days)) {
		t.Fatalf("archive: %+v, %v", out, err)
	}

	// The fixture has teeth: malo_id in several pages a chunk, both
	// dictionary-encoded and plain.
	pages, encoded := 0, map[string]bool{}
	err = filepath.WalkDir(e.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(path, ".parquet") || strings.Contains(path, "superseded=true") {
			return err
		}
		pf, err := file.OpenParquetFile(path, false)
		if err != nil {
			return err
		}
		defer pf.Close()
		col := pf.MetaData().Schema.ColumnIndexByName("malo_id")
		for g := range pf.NumRowGroups() {
			cc, err := pf.MetaData().RowGroup(g).ColumnChunk(col)
			if err != nil {
				return err
			}
			for _, st := range cc.EncodingStats() {
				encoded[st.Encoding.String()] = true
			}
			rg, err := pf.GetPageIndexReader().RowGroup(g)
			if err != nil {
				return err
			}
			oi, err := rg.GetOffsetIndex(col)
			if err != nil {
				return err
			}
			pages = max(pages, len(oi.GetPageLocations()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if pages < 3 || !encoded["PLAIN"] || !encoded["RLE_DICTIONARY"] {
		t.Fatalf("malo_id: at most %d pages a chunk, encoded %v; want several, both ways", pages, encoded)
	}

	const sql = `SELECT "from", CAST(value AS VARCHAR), CAST(version AS UBIGINT), channel, obis_code, quality FROM power.readings
		WHERE malo_id = '%s' AND obis_code = '%s' AND channel = '%s' AND "from" >= TIMESTAMPTZ '%s' AND "from" < TIMESTAMPTZ '%s' ORDER BY "from"`
	lit := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05+00") }
	from, to := dayN(0).Add(5*time.Hour), dayN(days)
	var total int
	for i := range meters {
		for _, o := range obis {
			for _, ch := range []string{"A", "B"} {
				got, err := s.SeriesReadings(ctx, "power", SeriesQuery{MaLo: malo(i), OBIS: o, From: from, To: to, Identity: map[string]string{"channel": ch}})
				if err != nil {
					t.Fatal(err)
				}
				res, err := s.Query(ctx, "power", fmt.Sprintf(sql, malo(i), o, ch, lit(from), lit(to)))
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(res.Rows) {
					t.Errorf("meter %d, %s, channel %s: %d readings, SQL %d", i, o, ch, len(got), len(res.Rows))
					continue
				}
				total += len(got)
				for k, r := range got {
					w := res.Rows[k]
					g := fmt.Sprintln(r.From.UTC(), r.Value, r.Version, r.Extra["channel"], r.OBIS, r.Quality, r.MaLo)
					x := fmt.Sprintln(w[0].(time.Time).UTC(), w[1], w[2], w[3], w[4], w[5], malo(i))
					if g != x {
						t.Errorf("meter %d, %s, channel %s: reading %d: %s; SQL %s", i, o, ch, k, g, x)
						break
					}
				}
			}
		}
	}
	// Every series of the fixture, each quarter hour of its range once.
	perDay := 96 - 20 // the first day from 05:00
	series := meters + (meters+2)/3 + meters/4
	if want := series * (perDay + 96*(days-1)); total != want {
		t.Errorf("%d readings in all, want %d", total, want)
	}
}
