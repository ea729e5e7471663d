package query

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/series"
)

// twoTables is power and gas of the same market locations, each in a real
// Iceberg table of its own with a different watermark: power archived up
// to February, gas up to March.
type twoTables struct {
	power, gas   *icebergSource
	ePower, eGas *Engine
}

// days returns n days of readings of location i from start, made by at.
func days(start time.Time, n int, step time.Duration, at func(from time.Time) series.Reading) []series.Reading {
	var out []series.Reading
	for from := start; from.Before(start.AddDate(0, 0, n)); from = from.Add(step) {
		out = append(out, at(from))
	}
	return out
}

func newTwoTables(t *testing.T) *twoTables {
	t.Helper()
	ctx := t.Context()
	p, g := newIcebergSource(t, loadProfile()), newIcebergSource(t, gasHourly())
	var (
		pJan, pFeb, gJan, gFeb, gMar []series.Reading
	)
	for i := range 3 {
		power := func(from time.Time) series.Reading { return reading(i, from, int64(1000*(i+1))+int64(from.Hour())) }
		gas := func(from time.Time) series.Reading {
			r := gasHour(i, from)
			r.Value = series.Decimal(int64(7000*(i+1)) + int64(from.Hour()))
			return r
		}
		pJan = append(pJan, days(jan2026.AddDate(0, 0, 29), 2, 15*time.Minute, power)...)
		pFeb = append(pFeb, days(feb2026, 2, 15*time.Minute, power)...)
		pFeb = append(pFeb, days(feb2026.AddDate(0, 0, 27), 2, 15*time.Minute, power)...)
		gJan = append(gJan, days(jan2026.AddDate(0, 0, 29), 2, time.Hour, gas)...)
		gFeb = append(gFeb, days(feb2026, 2, time.Hour, gas)...)
		gFeb = append(gFeb, days(feb2026.AddDate(0, 0, 27), 1, time.Hour, gas)...)
		gMar = append(gMar, days(mar2026, 2, time.Hour, gas)...)
	}
	// A correction in power's hot tier, which resolution must prefer.
	fix := pFeb[5]
	fix.Version, fix.Value = 2, fix.Value+500_000
	pFeb = append(pFeb, fix)
	if _, err := p.tier.Archive(ctx, p.h, feb2026, jan2026, feb2026, cold.Readings(inKeyOrder(pJan))); err != nil {
		t.Fatal(err)
	}
	p.addHot(pFeb...)
	p.floor = feb2026
	if _, err := g.tier.Archive(ctx, g.h, feb2026, jan2026, feb2026, cold.Readings(inKeyOrder(gJan))); err != nil {
		t.Fatal(err)
	}
	if _, err := g.tier.Archive(ctx, g.h, mar2026, feb2026, mar2026, cold.Readings(inKeyOrder(gFeb))); err != nil {
		t.Fatal(err)
	}
	g.addHot(gMar...)
	g.floor = mar2026
	tt := &twoTables{power: p, gas: g}
	pt, err := NewTable(p.tab, p)
	if err != nil {
		t.Fatal(err)
	}
	gt, err := NewTable(g.tab, g)
	if err != nil {
		t.Fatal(err)
	}
	// One engine each, with the same tables, so that each table is the
	// default of the tests' statements on one.
	if tt.ePower, err = deployment(Settings{Threads: 1}, pt, gt); err != nil {
		t.Fatal(err)
	}
	if tt.eGas, err = deployment(Settings{Threads: 1}, gt, pt); err != nil {
		t.Fatal(err)
	}
	return tt
}

// rowsOf returns the rows of a result as text, one line a row.
func rowsOf(res *Result) []string {
	out := make([]string, len(res.Rows))
	for i, r := range res.Rows {
		out[i] = fmt.Sprint(r)
	}
	return out
}

// joinAlone joins, per market location and interval start, the rows
// (malo_id, from, value) that each engine returns alone, as
// "malo from power gas", sorted.
func joinAlone(t *testing.T, power, gas *Engine, where string) []string {
	t.Helper()
	sql := `SELECT malo_id, "from", value FROM readings WHERE ` + where
	type key struct{ malo, from string }
	g := map[key][]string{}
	for _, r := range query(t, gas, sql).Rows {
		k := key{text(r[0]), text(r[1])}
		g[k] = append(g[k], text(r[2]))
	}
	var out []string
	for _, r := range query(t, power, sql).Rows {
		k := key{text(r[0]), text(r[1])}
		for _, gv := range g[k] {
			out = append(out, strings.Join([]string{k.malo, k.from, text(r[2]), gv}, " "))
		}
	}
	sort.Strings(out)
	return out
}

// TestCrossTableJoin joins power and gas per market location across both
// watermarks: the answer is the one each table gives alone, each table is
// split at its own W, read from both its tiers, and the header reports
// both.
func TestCrossTableJoin(t *testing.T) {
	tt := newTwoTables(t)
	const where = `"from" >= '2026-01-30 00:00:00Z' AND "from" < '2026-03-02 00:00:00Z'`
	want := joinAlone(t, tt.ePower, tt.eGas, where)
	if len(want) == 0 {
		t.Fatal("no rows to compare")
	}
	const sql = `SELECT p.malo_id, p."from", p.value, g.value FROM readings p JOIN gas.readings g ON p.malo_id = g.malo_id AND p."from" = g."from"
		WHERE p."from" >= '2026-01-30 00:00:00Z' AND p."from" < '2026-03-02 00:00:00Z'
		AND g."from" >= '2026-01-30 00:00:00Z' AND g."from" < '2026-03-02 00:00:00Z'`
	tt.power.Calls()
	tt.gas.Calls()
	res := query(t, tt.ePower, sql)
	var got []string
	for _, r := range res.Rows {
		got = append(got, strings.Join([]string{text(r[0]), text(r[1]), text(r[2]), text(r[3])}, " "))
	}
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Fatalf("joined %d rows, alone %d:\n got %q\nwant %q", len(got), len(want), first(got, 5), first(want, 5))
	}
	// Each table's range came from its own conjuncts, each was read from
	// both tiers, split at its own W.
	for _, s := range []*icebergSource{tt.power, tt.gas} {
		calls := s.Calls()
		if !slices.Contains(calls, "cold[2026-01-30T00:00:00,2026-03-02T00:00:00)") {
			t.Errorf("%s: calls %v, want a cold plan of the statement's range", s.tab.Name, calls)
		}
	}
	if len(res.Tables) != 2 {
		t.Fatalf("tables read: %+v", res.Tables)
	}
	p, g := res.Tables[0], res.Tables[1]
	if p.Name != "power" || !p.HasWatermark || !p.Watermark.Equal(feb2026) || !slices.Equal(p.Tiers, []string{"cold", "hot"}) || p.Snapshot == 0 {
		t.Errorf("power read: %+v", p)
	}
	if g.Name != "gas" || !g.HasWatermark || !g.Watermark.Equal(mar2026) || !slices.Equal(g.Tiers, []string{"cold", "hot"}) || g.Snapshot == 0 {
		t.Errorf("gas read: %+v", g)
	}
	if !res.HasWatermark || !res.Watermark.Equal(feb2026) || res.Snapshot != p.Snapshot || !slices.Equal(res.Tiers, p.Tiers) {
		t.Errorf("the header's own fields are not power's: %+v", res.Header)
	}
	if !g.Range.From.Equal(ts("2026-01-30T00:00:00Z")) || !g.Range.To.Equal(ts("2026-03-02T00:00:00Z")) {
		t.Errorf("gas range %+v", g.Range)
	}

	// Per market location, aggregated over everything: the same as each
	// table's totals alone, from either table's engine.
	const totals = `SELECT malo_id, p.total, g.total FROM (SELECT malo_id, sum(value) AS total FROM power.readings GROUP BY malo_id) p
		JOIN (SELECT malo_id, sum(value) AS total FROM gas.readings GROUP BY malo_id) g USING (malo_id) ORDER BY malo_id`
	alone := map[string][2]string{}
	for _, r := range query(t, tt.ePower, `SELECT malo_id, sum(value) FROM readings GROUP BY malo_id`).Rows {
		alone[text(r[0])] = [2]string{text(r[1])}
	}
	for _, r := range query(t, tt.eGas, `SELECT malo_id, sum(value) FROM readings GROUP BY malo_id`).Rows {
		a := alone[text(r[0])]
		a[1] = text(r[1])
		alone[text(r[0])] = a
	}
	for _, e := range []*Engine{tt.ePower, tt.eGas} {
		res := query(t, e, totals)
		if len(res.Rows) != 3 || len(res.Tables) != 2 {
			t.Fatalf("%s: %d rows, tables %+v", e.first(), len(res.Rows), res.Tables)
		}
		for _, r := range res.Rows {
			if a := alone[text(r[0])]; a[0] != text(r[1]) || a[1] != text(r[2]) {
				t.Errorf("%s: %v, alone %v", e.first(), r, a)
			}
		}
		if res.Tables[0].Name != e.first() {
			t.Errorf("%s: own table not first: %+v", e.first(), res.Tables)
		}
	}
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// wrongW is a gas source that reports power's watermark: a query that
// split gas there would lose February's gas rows, which neither its hot
// tier nor its cold files below that W hold.
type wrongW struct{ *icebergSource }

func (s wrongW) Watermark(ctx context.Context) (time.Time, bool, error) { return feb2026, true, nil }

func (s wrongW) HotFloor(ctx context.Context) (Floor, error) {
	return Floor{Detached: feb2026, Attached: feb2026, HasAttached: true}, nil
}

func (s wrongW) Cold(ctx context.Context, q series.Range) (cold.Plan, error) {
	p, err := s.icebergSource.Cold(ctx, q)
	p.Watermark = feb2026
	return p, err
}

// TestCrossTableOracle: the comparison of TestCrossTableJoin fails for an
// engine that splits gas at power's watermark.
func TestCrossTableOracle(t *testing.T) {
	tt := newTwoTables(t)
	bad, err := NewTable(tt.gas.tab, wrongW{tt.gas})
	if err != nil {
		t.Fatal(err)
	}
	splitWrong, err := deployment(Settings{Threads: 1}, tt.ePower.firstTable(), bad)
	if err != nil {
		t.Fatal(err)
	}
	want := joinAlone(t, tt.ePower, tt.eGas, `"from" >= '2026-01-30 00:00:00Z' AND "from" < '2026-03-02 00:00:00Z'`)
	res := query(t, splitWrong, `SELECT p.malo_id, p."from", p.value, g.value FROM readings p JOIN gas.readings g ON p.malo_id = g.malo_id AND p."from" = g."from"
		WHERE p."from" >= '2026-01-30 00:00:00Z' AND p."from" < '2026-03-02 00:00:00Z'`)
	if len(want) == 0 || len(res.Rows) == len(want) {
		t.Fatalf("split at the wrong W, the join still has the %d rows of the tables alone", len(want))
	}
}

// TestCrossTableRefusals: an undeclared table, a table without a lookup
// and a read as of one table's snapshot are refused before any tier is
// read; a table that cannot be read fails the statement with its error.
func TestCrossTableRefusals(t *testing.T) {
	tt := newTwoTables(t)
	tt.power.Calls()
	for _, sql := range []string{
		`SELECT count(*) FROM nosuch.readings`,
		`SELECT * FROM readings p JOIN nosuch.readings_versions n USING (malo_id)`,
		`SELECT * FROM tiers.readings`,
	} {
		if _, err := queryOf(t.Context(), tt.ePower, sql); !errors.Is(err, ErrInvalidQuery) {
			t.Errorf("%s: %v, want ErrInvalidQuery", sql, err)
		}
	}
	if calls := tt.power.Calls(); len(calls) != 0 {
		t.Errorf("refused statements read power: %v", calls)
	}
	alone, err := single(tt.power.tab, tt.power, Settings{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := queryOf(t.Context(), alone, `SELECT count(*) FROM gas.readings`); !errors.Is(err, ErrInvalidQuery) {
		t.Errorf("without other tables: %v, want ErrInvalidQuery", err)
	}
	if _, err := queryAt(t.Context(), tt.ePower, `SELECT count(*) FROM gas.readings`, ReadOptions{AsOfSnapshot: 1}); err == nil {
		t.Error("as of one table's snapshot ID, another table was read")
	}
	boom := errors.New("gas cannot be opened")
	power := tt.ePower.firstTable()
	unopened, err := New(Settings{Threads: 1}, Tables{Names: []string{"power", "gas"}, Open: func(_ context.Context, name string) (*Table, error) {
		if name == "gas" {
			return nil, boom
		}
		return power, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := queryOf(t.Context(), unopened, `SELECT count(*) FROM gas.readings`); !errors.Is(err, boom) || errors.Is(err, ErrInvalidQuery) {
		t.Errorf("a table that cannot be read: %v", err)
	}
}

// TestMainRefused: no table's relations are in the schema main, so a
// statement that names main.readings or the like, with a default table or
// without, is refused at its analysis with an error that says where they
// are, before either table's tiers are read; the same relations in the
// schema of their table are read.
func TestMainRefused(t *testing.T) {
	tt := newTwoTables(t)
	tt.power.Calls()
	tt.gas.Calls()
	for _, c := range []struct{ sql, self, want string }{
		{`SELECT count(*) FROM main.readings`, "power", "main.readings: a table's relations are in the schema of its name, as power.readings"},
		{`SELECT count(*) FROM MAIN.readings_versions`, "power", "MAIN.readings_versions: "},
		{`SELECT count(*) FROM meterstore.main.completeness`, "power", "main.completeness: "},
		{`SELECT count(*) FROM main.daily`, "power", "main.daily: "},
		{`SELECT count(*) FROM power.readings x JOIN main.readings y USING (malo_id)`, "power", "main.readings: "},
		{`SELECT count(*) FROM gas.readings, main.readings`, "", "main.readings: a table's relations are in the schema of its name, as <table>.readings"},
		{`SELECT * FROM query('SELECT count(*) FROM main.readings')`, "power", "main.readings: "},
	} {
		st, err := tt.ePower.Prepare(t.Context(), c.sql, PrepareOptions{Table: c.self})
		if st != nil {
			st.Close()
		}
		if !errors.Is(err, ErrInvalidQuery) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s, default %q: %v, want an invalid statement saying %q", c.sql, c.self, err, c.want)
		}
		if calls := append(tt.power.Calls(), tt.gas.Calls()...); len(calls) != 0 {
			t.Errorf("%s: a refused statement read the tiers: %v", c.sql, calls)
		}
	}
	if _, err := Extract(`SELECT * FROM main.readings`); !errors.Is(err, ErrInvalidQuery) || !strings.Contains(err.Error(), "main.readings: ") {
		t.Errorf("Extract of main.readings: %v", err)
	}
	want := rowsOf(query(t, tt.ePower, `SELECT count(*) FROM readings`))
	if got := rowsOf(query(t, tt.ePower, `SELECT count(*) FROM meterstore.power.readings`)); len(want) != 1 || !slices.Equal(got, want) {
		t.Errorf("power.readings in the query's database: %v, unqualified %v", got, want)
	}
}

// TestCrossTableAlone: a statement that reads only another table reads
// none of the engine's own, and the engine's own table by its name is
// the same as unqualified.
func TestCrossTableAlone(t *testing.T) {
	tt := newTwoTables(t)
	tt.power.Calls()
	res := query(t, tt.ePower, `SELECT count(*), sum(value) FROM gas.readings WHERE "from" >= '2026-02-01 00:00:00Z'`)
	want := query(t, tt.eGas, `SELECT count(*), sum(value) FROM readings WHERE "from" >= '2026-02-01 00:00:00Z'`)
	if fmt.Sprint(res.Rows) != fmt.Sprint(want.Rows) || res.Rows[0][0].(int64) == 0 {
		t.Errorf("gas from power's engine: %v, alone %v", res.Rows, want.Rows)
	}
	if calls := tt.power.Calls(); len(calls) != 0 {
		t.Errorf("power read for a statement on gas alone: %v", calls)
	}
	if len(res.Tables) != 1 || res.Tables[0].Name != "gas" || !res.Tables[0].Watermark.Equal(mar2026) || res.HasWatermark || res.Tiers != nil {
		t.Errorf("header %+v", res.Header)
	}
	for _, sql := range []string{`SELECT * FROM power.readings ORDER BY ALL`, `SELECT * FROM power.readings_versions ORDER BY ALL`} {
		own := strings.Replace(sql, "power.", "", 1)
		if got, want := rowsOf(query(t, tt.ePower, sql)), rowsOf(query(t, tt.ePower, own)); len(got) == 0 || !slices.Equal(got, want) {
			t.Errorf("%s: %d rows, %s: %d", sql, len(got), own, len(want))
		}
	}
}

// TestCrossTableReadOptions: as known at and as of a time apply to every
// table a statement reads.
func TestCrossTableReadOptions(t *testing.T) {
	tt := newTwoTables(t)
	const sql = `SELECT (SELECT count(*) FROM readings_versions), (SELECT count(*) FROM gas.readings_versions)`
	all := query(t, tt.ePower, sql).Rows[0]
	if all[0].(int64) == 0 || all[1].(int64) == 0 {
		t.Fatalf("counts %v", all)
	}
	for _, c := range []struct {
		opts ReadOptions
		want string
	}{
		{ReadOptions{KnownAt: rec.Add(-time.Microsecond)}, "[0 0]"},
		{ReadOptions{KnownAt: rec}, fmt.Sprint(all)},
		{ReadOptions{AsOf: time.Now()}, fmt.Sprint(all)}, // each table's current snapshot
	} {
		res, err := queryAt(t.Context(), tt.ePower, sql, c.opts)
		if err != nil {
			t.Fatalf("%+v: %v", c.opts, err)
		}
		if got := fmt.Sprint(res.Rows[0]); got != c.want {
			t.Errorf("%+v: counts %s, want %s", c.opts, got, c.want)
		}
		if len(res.Tables) != 2 {
			t.Fatalf("%+v: tables %+v", c.opts, res.Tables)
		}
		for _, tr := range res.Tables {
			if tr.AsOf != !c.opts.AsOf.IsZero() || tr.Snapshot == 0 || tr.Ceiling.IsZero() || (!c.opts.KnownAt.IsZero() && !tr.Ceiling.Equal(c.opts.KnownAt)) {
				t.Errorf("%+v: %s read %+v", c.opts, tr.Name, tr)
			}
		}
	}
}
