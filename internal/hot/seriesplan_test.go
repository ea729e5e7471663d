package hot

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/meterstore/meterstore/series"
)

// TestReadSeriesPlansByKeys: in the lean and the dictionary layout, the
// statement of a one-series read of a day looks up the series dictionary
// by its key: it never reads it whole, which would cost every read time
// in proportion to the meters and days held. It answers the day's
// readings, and the floor once.
func TestReadSeriesPlansByKeys(t *testing.T) {
	for _, l := range []layout{layoutLean, layoutDictionary} {
		t.Run(l.String(), func(t *testing.T) {
			ctx := t.Context()
			h, pool := newTier(t, Options{})
			h.statementLayout = l
			tab := lastgang("portal")
			tab.Integrity = series.IntegrityStatement
			declare(t, h, tab)
			const meters = 400
			var rows []series.Reading
			for i := range meters {
				day := meterDay(i, 100)
				// Attributes of many kinds, as deliveries bring them.
				for n := range day {
					day[n].VersionScope = day[n].VersionScope[:len(day[n].VersionScope)-1] + string(rune('1'+(i+n)%9))
				}
				rows = append(rows, day...)
			}
			mustWrite(t, h, tab, rows)
			if _, err := pool.Exec(ctx, `ANALYZE `+h.ident(tab.Name)+`, `+h.ident(seriesName(tab))+`, `+h.ident(attrsName(tab))); err != nil {
				t.Fatal(err)
			}
			lay, err := h.layoutOf(ctx, pool, tab)
			if err != nil || lay != l {
				t.Fatalf("layout %v, %v; want %v", lay, err, l)
			}
			q := SeriesQuery{MaLo: malo(7), OBIS: "1-1:1.29.0", From: day, To: day.Add(24 * time.Hour)}
			sql, args, err := h.seriesSQL(tab, lay, q)
			if err != nil {
				t.Fatal(err)
			}
			var plan []byte
			if err := pool.QueryRow(ctx, `EXPLAIN (FORMAT JSON) `+sql, args...).Scan(&plan); err != nil {
				t.Fatal(err)
			}
			var doc []struct{ Plan node }
			if err := json.Unmarshal(plan, &doc); err != nil || len(doc) != 1 {
				t.Fatalf("plan %s: %v", plan, err)
			}
			var scans []string
			doc[0].Plan.walk(func(n node) {
				if n.Relation == seriesName(tab) {
					scans = append(scans, n.Type)
				}
			})
			if len(scans) == 0 || slices.Contains(scans, "Seq Scan") {
				t.Errorf("the series dictionary is read by %v; want its key alone: %s", scans, plan)
			}
			res, err := h.ReadSeries(ctx, tab, q)
			if err != nil || len(res.Readings) != 96 || res.Attached.IsZero() || !res.Detached.IsZero() {
				t.Fatalf("read: %d readings, attached from %s, detached to %s, %v", len(res.Readings), res.Attached, res.Detached, err)
			}
			for i, r := range res.Readings {
				if want := day.Add(time.Duration(95-i) * 15 * time.Minute); r.MaLo != malo(7) || !r.From.Equal(want) {
					t.Fatalf("reading %d: %s at %s, want %s at %s", i, r.MaLo, r.From, malo(7), want)
				}
			}
		})
	}
}

// A node is a plan node of EXPLAIN (FORMAT JSON), as far as the test reads it.
type node struct {
	Type     string `json:"Node Type"`
	Relation string `json:"Relation Name"`
	Plans    []node `json:"Plans"`
}

// walk calls f on n and every node below it.
func (n node) walk(f func(node)) {
	f(n)
	for _, c := range n.Plans {
		c.walk(f)
	}
}
