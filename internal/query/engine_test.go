package query

import (
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/meterstore/meterstore/series"
)

// values returns the rows of a query as text, one string a row.
func values(t *testing.T, e *Engine, sql string) []string {
	t.Helper()
	var out []string
	for _, r := range query(t, e, sql).Rows {
		s := ""
		for i, v := range r {
			if i > 0 {
				s += " "
			}
			s += text(v)
		}
		out = append(out, s)
	}
	return out
}

func text(v any) string {
	switch v := v.(type) {
	case time.Time:
		return v.UTC().Format("2006-01-02T15:04:05.999999")
	case duckdb.Decimal:
		return decimalText(v)
	case nil:
		return "NULL"
	}
	return fmt.Sprint(v)
}

func TestUnionSplitsAtTheWatermark(t *testing.T) {
	s := newSource(t, loadProfile())
	w := feb2026
	eps := w.Add(-time.Microsecond)
	below, at := reading(1, w.Add(-15*time.Minute), 1_000_000), reading(1, w, 2_000_000)
	// A cold row at W-ε in a file with a stray row at W; a hot row at W
	// and a stray hot row at W-ε, which breaks the tier split.
	strayCold, strayHot := reading(2, w, 66_000_000), reading(2, eps, 77_000_000)
	s.addCold([]series.Reading{below, strayCold})
	s.addHot(at, strayHot)
	s.w, s.hasW, s.floor = w, true, w
	e := newEngine(t, s)

	res := query(t, e, `SELECT malo_id, "from", value FROM readings_versions ORDER BY "from"`)
	want := []string{
		malo(1) + " 2026-01-31T23:45:00 1.000000",
		malo(1) + " 2026-02-01T00:00:00 2.000000",
	}
	if got := values(t, e, `SELECT malo_id, "from", value FROM readings_versions ORDER BY "from"`); !slices.Equal(got, want) {
		t.Fatalf("rows\n got %v\nwant %v", got, want)
	}
	if !slices.Equal(res.Tiers, []string{"cold", "hot"}) || !res.HasWatermark || !res.Watermark.Equal(w) {
		t.Fatalf("tiers %v, watermark %v %v", res.Tiers, res.Watermark, res.HasWatermark)
	}
	// Exactly at the boundary on either side.
	for sql, n := range map[string]int64{
		`SELECT count(*) FROM readings WHERE "from" < '2026-02-01 00:00:00Z'`:                                          1,
		`SELECT count(*) FROM readings WHERE "from" >= '2026-02-01 00:00:00Z'`:                                         1,
		`SELECT count(*) FROM readings WHERE "from" = TIMESTAMPTZ '2026-01-31 23:59:59.999999+00'`:                     0,
		`SELECT count(*) FROM readings WHERE "from" BETWEEN '2026-01-31 23:45:00+00' AND '2026-02-01 00:00:00+00'`:     2,
		`SELECT count(*) FROM readings_versions WHERE malo_id = '` + malo(2) + `'`:                                     0,
		`SELECT count(*) FROM readings WHERE "from" > '2026-01-31 23:45:00+00' AND "from" <= '2026-02-01 00:00:00+00'`: 1,
	} {
		if got := count(t, e, sql); got != n {
			t.Errorf("%s: %d, want %d", sql, got, n)
		}
	}
}

func TestVersionResolution(t *testing.T) {
	s := newSource(t, loadProfile())
	w := feb2026
	day := jan2026.Add(10 * 24 * time.Hour)
	later := rec.Add(time.Hour)
	v := func(r series.Reading, version uint64, recorded time.Time, channel string) series.Reading {
		r.Version, r.RecordedAt = version, recorded
		r.Extra = map[string]string{"channel": channel}
		return r
	}
	a := reading(1, day, 1_000_000)
	b := reading(2, day, 2_000_000)
	c := reading(3, day, 3_000_000)
	d := reading(1, w.Add(time.Hour), 4_000_000)
	s.addCold([]series.Reading{
		// a: the highest version wins, whatever the order of the rows.
		v(a, 20260101000002, rec, "A"), withValue(v(a, 20260101000009, rec, "A"), 1_500_000), v(a, 20260101000005, later, "A"),
		// b: one version twice, the latest recorded_at wins.
		v(b, 7, rec, "A"), withValue(v(b, 7, later, "A"), 2_500_000),
		// c: channels are separate series.
		v(c, 1, rec, "A"), withValue(v(c, 2, rec, "B"), 3_500_000),
	})
	s.addHot(v(d, 3, rec, "A"), withValue(v(d, 4, rec, "A"), 4_500_000), withValue(v(d, 1, later, "B"), 4_700_000))
	s.w, s.hasW, s.floor = w, true, w
	e := newEngine(t, s)

	got := values(t, e, `SELECT malo_id, channel, version, value FROM readings ORDER BY malo_id, "from", channel`)
	want := []string{
		malo(1) + " A 20260101000009 1.500000",
		malo(1) + " A 4 4.500000",
		malo(1) + " B 1 4.700000",
		malo(2) + " A 7 2.500000",
		malo(3) + " A 1 3.000000",
		malo(3) + " B 2 3.500000",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("readings\n got %v\nwant %v", got, want)
	}
	if n := count(t, e, `SELECT count(*) FROM readings_versions`); n != 10 {
		t.Fatalf("%d versions, want 10", n)
	}
}

func withValue(r series.Reading, v int64) series.Reading {
	r.Value = series.Decimal(v)
	return r
}

func TestColumnsAndTypes(t *testing.T) {
	s := newSource(t, loadProfile())
	r := reading(1, jan2026, int64(series.MaxDecimal))
	r.Version = 18446744073709551615
	r.MeLo, r.Subject = "DE0001234567890123456789012345678", "p-17"
	r.Extra = map[string]string{"channel": "B", "source": "MSCONS", "seq": "-9223372036854775808"}
	h := reading(1, feb2026, -int64(series.MaxDecimal))
	// The cold file predates the column seq: it reads as NULL.
	old := r
	old.From, old.To = jan2026.Add(time.Hour), jan2026.Add(time.Hour+15*time.Minute)
	s.addCold([]series.Reading{r})
	s.addCold([]series.Reading{old}, "seq")
	s.addHot(h)
	s.w, s.hasW, s.floor = feb2026, true, feb2026
	e := newEngine(t, s)

	res := query(t, e, `SELECT * FROM readings ORDER BY "from"`)
	wantCols := []string{"malo_id", "melo_id", "obis_code", "sparte", "from", "to", "value", "unit", "quality", "resolution",
		"version", "version_scope", "recorded_at", "balancing_day", "subject_id", "channel", "source", "seq"}
	wantTypes := []string{"VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "TIMESTAMPTZ", "TIMESTAMPTZ", "DECIMAL(18,6)", "VARCHAR", "VARCHAR", "VARCHAR",
		"DECIMAL(20,0)", "VARCHAR", "TIMESTAMPTZ", "DATE", "VARCHAR", "VARCHAR", "VARCHAR", "BIGINT"}
	if !slices.Equal(res.Columns, wantCols) || !slices.Equal(res.Types, wantTypes) {
		t.Fatalf("columns %v %v", res.Columns, res.Types)
	}
	if len(res.Rows) != 3 {
		t.Fatalf("%d rows", len(res.Rows))
	}
	row := res.Rows[0]
	max := new(big.Int)
	max.SetString("18446744073709551615", 10)
	for i, want := range []any{
		malo(1), "DE0001234567890123456789012345678", "1-1:1.29.0", "STROM", jan2026, jan2026.Add(15 * time.Minute),
		duckdb.Decimal{Width: 18, Scale: 6, Value: big.NewInt(int64(series.MaxDecimal))}, "kWh", "220", "PT15M",
		duckdb.Decimal{Width: 20, Scale: 0, Value: max}, "9900000000003:2026-01", rec, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		"p-17", "B", "MSCONS", int64(-9223372036854775808),
	} {
		if !reflect.DeepEqual(normalize(row[i]), normalize(want)) {
			t.Errorf("column %s: %#v, want %#v", res.Columns[i], row[i], want)
		}
	}
	if res.Rows[1][17] != nil || res.Rows[1][16] != "MSCONS" {
		t.Errorf("a file without seq: seq %v, source %v", res.Rows[1][17], res.Rows[1][16])
	}
	if h := res.Rows[2]; text(h[6]) != "-999999999999.999999" || h[1] != nil || h[14] != nil || h[16] != nil || h[17] != nil {
		t.Errorf("hot row %v", h)
	}
}

// decimalText formats d with all its decimal places.
func decimalText(d duckdb.Decimal) string {
	digits := new(big.Int).Abs(d.Value).String()
	sign := ""
	if d.Value.Sign() < 0 {
		sign = "-"
	}
	if d.Scale == 0 {
		return sign + digits
	}
	for len(digits) <= int(d.Scale) {
		digits = "0" + digits
	}
	cut := len(digits) - int(d.Scale)
	return sign + digits[:cut] + "." + digits[cut:]
}

func normalize(v any) any {
	switch v := v.(type) {
	case time.Time:
		return v.UTC()
	case duckdb.Decimal:
		return decimalText(v) + fmt.Sprint(v.Width, v.Scale)
	}
	return v
}
