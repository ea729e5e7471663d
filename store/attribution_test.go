package store

import (
	"fmt"
	"strings"
	"testing"

	"github.com/meterstore/meterstore/series"
)

// TestWriteAttributionBounded: a batch's source and substitute author
// are held to series.CheckAttribution before any row is looked at, and a
// row's own source_ref by the one check both tiers apply: a late
// correction below the watermark is refused exactly as a hot write is,
// and a NUL is refused by that rule, not by PostgreSQL's encoding error.
// Nothing of a refused batch is stored.
func TestWriteAttributionBounded(t *testing.T) {
	ctx := t.Context()
	tab := power()
	tab.Columns = append(tab.Columns, series.ProvenanceColumns()...)
	tab.Columns = append(tab.Columns, series.Column{Name: ColumnSubstitutedBy})
	s := newEnv(t).open(t, Options{Tables: []Table{tab}})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(6)); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, []Reading{qh(1, 0, 0, "A", 1, 100)})
	if out, err := s.Archive(ctx, "power", dayN(5)); err != nil || !out.Watermark.Equal(dayN(3)) {
		t.Fatalf("archive: %+v, %v", out, err)
	}
	long := strings.Repeat("x", 100<<10) // the 100 KB header of issue 45
	withRef := func(r Reading, ref string) Reading {
		r.Extra = map[string]string{"channel": "A", series.ColumnSourceRef: ref}
		return r
	}
	for _, tier := range []struct {
		name string
		day  int // below the watermark, day 0, goes to the cold tier
	}{{"hot", 4}, {"cold", 0}} {
		for _, c := range []struct {
			name  string
			rows  []Reading
			opts  WriteOptions
			row   int // the row named, -1 for none
			wants []string
		}{
			{"a long source", []Reading{qh(2, tier.day, 1, "A", 1, 1)}, WriteOptions{Source: Source{Kind: series.SourceAPI, Ref: long}},
				-1, []string{"source reference", "source_ref", "102400 bytes, longer than the 1024 allowed"}},
			{"a NUL in the source", []Reading{qh(2, tier.day, 1, "A", 1, 1)}, WriteOptions{Source: Source{Kind: series.SourceAPI, Ref: "\x00"}},
				-1, []string{"source reference", "control character U+0000"}},
			{"an escape in the kind", []Reading{qh(2, tier.day, 1, "A", 1, 1)}, WriteOptions{Source: Source{Kind: "api\x1b[2J"}},
				-1, []string{"source kind", "control character U+001B"}},
			{"a long source_ref cell", []Reading{qh(2, tier.day, 1, "A", 1, 1), withRef(qh(2, tier.day, 2, "A", 1, 1), long)}, WriteOptions{},
				1, []string{`column "source_ref"`, "102400 bytes, longer than the 1024 allowed"}},
			{"a NUL in a source_ref cell", []Reading{withRef(qh(2, tier.day, 2, "A", 1, 1), "a\x00b")}, WriteOptions{},
				0, []string{`column "source_ref"`, "control character U+0000 at byte 1"}},
			{"an author with a line break", []Reading{substitute(2, tier.day, 3, 1)}, WriteOptions{Substitute: true, By: "9900000000012\n"},
				-1, []string{"WriteOptions.By", "control character U+000A"}},
		} {
			t.Run(tier.name+"/"+c.name, func(t *testing.T) {
				res, err := s.WriteWith(ctx, "power", c.rows, c.opts)
				if !isKind(err, series.InvalidInput) {
					t.Fatalf("%v, want invalid input", err)
				}
				msg := err.Error()
				for _, w := range c.wants {
					if !strings.Contains(msg, w) {
						t.Errorf("%s\nwants %q", msg, w)
					}
				}
				if len(msg) > 2000 {
					t.Errorf("the error is %d bytes long", len(msg))
				}
				if named := fmt.Sprint(res.Status); c.row >= 0 && res.Status[c.row] != series.Refused {
					t.Errorf("statuses %s: row %d not named", named, c.row)
				}
			})
		}
	}
	if got := mustQuery(t, s, `SELECT count(*) FROM readings_versions`); fmt.Sprint(got.Rows) != "[[1]]" {
		t.Fatalf("refused batches stored readings: %v", got.Rows)
	}
	// Within the bound, in both tiers.
	ok := WriteOptions{Source: Source{Kind: series.SourceAPI, Ref: strings.Repeat("é", series.MaxAttributionLen/2)}}
	for _, d := range []int{0, 4} {
		if _, err := s.WriteWith(ctx, "power", []Reading{qh(3, d, 1, "A", 1, 1)}, ok); err != nil {
			t.Fatalf("a source of %d bytes on day %d: %v", len(ok.Source.Ref), d, err)
		}
	}
}
