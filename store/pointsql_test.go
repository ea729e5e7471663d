package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/query"
	"github.com/meterstore/meterstore/metering"
)

// pointAnswer runs sql as Prepare and Query do, with DuckDB alone if
// sqlOnly, and returns the header without its timing, the rows as text
// (each value with its Go type) and whether the typed read answered it.
func pointAnswer(t *testing.T, s *Store, sql string, o StatementOptions, sqlOnly bool) (ResultHeader, []string, bool) {
	t.Helper()
	s.sqlOnly = sqlOnly
	defer func() { s.sqlOnly = false }()
	st, err := s.Prepare(t.Context(), sql, o)
	if err != nil {
		t.Fatalf("%s (sql only %v): %v", sql, sqlOnly, err)
	}
	res, err := st.Query(t.Context())
	if err != nil {
		t.Fatalf("%s (sql only %v): %v", sql, sqlOnly, err)
	}
	typed := slices.ContainsFunc(res.Timing.Steps, func(st query.Step) bool { return st.Name == query.StepTyped })
	h := res.ResultHeader
	h.Timing = query.Timing{}
	h.Tables = slices.Clone(h.Tables)
	for i := range h.Tables {
		h.Tables[i].Timing = query.Timing{}
	}
	rows := make([]string, len(res.Rows))
	for i, r := range res.Rows {
		var b strings.Builder
		for _, v := range r {
			fmt.Fprintf(&b, "%T:%v|", v, v)
		}
		rows[i] = b.String()
	}
	return h, rows, typed
}

// TestPointSQLOracle: a point statement (one series of one table's
// readings, constants for malo_id, obis_code and identity columns,
// comparisons of "from") is answered by the typed read, without DuckDB,
// and answers exactly what DuckDB answers for it: the same header
// (columns, types, watermark, tiers, snapshot, ceiling, tables) and the
// same rows with the same Go values, over random late corrections across
// the tier boundary after two archivals, an identity column and a gas
// table, literals and parameters, as of a snapshot, known at a time and
// in each read mode.
func TestPointSQLOracle(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	ctx := t.Context()
	s := newEnv(t).open(t, Options{Tables: []Table{power(), gasDaily()}})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(7)); err != nil {
		t.Fatal(err)
	}
	write := func(name string, rs ...Reading) {
		t.Helper()
		if _, err := s.Write(ctx, name, rs); err != nil {
			t.Fatal(err)
		}
	}
	version := uint64(10)
	randomPower := func(n int, days int) []Reading {
		var rs []Reading
		seen := map[string]bool{}
		for range n {
			r := qh(rng.IntN(3), rng.IntN(days), rng.IntN(12), []string{"A", "B"}[rng.IntN(2)], version+uint64(rng.IntN(3)), rng.Int64N(1e9))
			if rng.IntN(5) == 0 {
				r.Quality = metering.Substitute
			}
			k := fmt.Sprint(r.MaLo, r.From, r.Extra["channel"], r.Version)
			if !seen[k] {
				seen[k] = true
				rs = append(rs, r)
			}
		}
		version += 3
		return rs
	}
	randomGas := func(days int) []Reading {
		var rs []Reading
		for i := range 2 {
			for d := range days {
				if rng.IntN(3) > 0 {
					rs = append(rs, gasDay(i, d, version, rng.Int64N(1e9)))
				}
			}
		}
		version++
		return rs
	}
	write("power", randomPower(300, 6)...)
	write("power", randomPower(100, 6)...)
	write("gas", randomGas(6)...)
	snapshot := func(name string, now, w time.Time) int64 {
		t.Helper()
		out, err := s.Archive(ctx, name, now)
		if err != nil || !out.Watermark.Equal(w) {
			t.Fatalf("archive %s at %s: %+v, %v; want W %s", name, now, out, err, w)
		}
		snaps, err := s.Snapshots(ctx, name)
		if err != nil || len(snaps) == 0 {
			t.Fatal(snaps, err)
		}
		return snaps[len(snaps)-1].ID
	}
	s1 := snapshot("power", dayN(4), dayN(2))
	snapshot("gas", dayN(4), dayN(2))
	time.Sleep(2 * time.Millisecond)
	t1 := time.Now()
	time.Sleep(2 * time.Millisecond)
	// Late corrections, below W and above.
	write("power", randomPower(80, 6)...)
	write("gas", randomGas(6)...)
	time.Sleep(2 * time.Millisecond)
	t2 := time.Now()
	snapshot("power", dayN(5), dayN(3))
	write("power", randomPower(40, 6)...)

	// A random instant near a quarter hour of the fixture, to the
	// microsecond on either side.
	instant := func() time.Time {
		at := dayN(rng.IntN(7)).Add(time.Duration(rng.IntN(14)) * 15 * time.Minute)
		if rng.IntN(3) == 0 {
			at = at.Add(time.Duration(rng.IntN(3)-1) * time.Microsecond)
		}
		return at
	}
	type stmt struct {
		sql    string
		table  string // default table
		params []any
		order  bool // its rows come in one order
	}
	gen := func() stmt {
		var st stmt
		gas := rng.IntN(4) == 0
		rel, table := "readings", "power"
		maloID, obis := malo(rng.IntN(4)), "1-1:1.29.0"
		if gas {
			table, maloID, obis = "gas", malo(500+rng.IntN(3)), "7-20:99.33.17"
		}
		switch rng.IntN(3) {
		case 0:
			st.table = table
		case 1:
			rel = table + ".readings"
		default:
			st.table, rel = table, table+".readings"
		}
		qual, alias := "", ""
		if rng.IntN(3) == 0 {
			qual, alias = "r.", " r"
		}
		value := func(v any) string {
			if rng.IntN(2) == 0 {
				st.params = append(st.params, v)
				return fmt.Sprintf("$%d", len(st.params))
			}
			switch v := v.(type) {
			case time.Time:
				return "TIMESTAMPTZ '" + v.Format("2006-01-02 15:04:05.999999Z07:00") + "'"
			default:
				return fmt.Sprintf("'%v'", v)
			}
		}
		lists := []string{"*", qual + `"from", ` + qual + "value", qual + "value AS v, " + qual + `"from", quality`, "*, " + qual + "version AS w"}
		if !gas {
			lists = append(lists, qual+"malo_id, channel, "+qual+`"to"`, qual+`recorded_at, "from" AS f, melo_id, subject_id, sparte`)
		}
		conds := []string{qual + "malo_id = " + value(maloID), value(obis) + " = " + qual + "obis_code"}
		fixed := gas
		if !gas && rng.IntN(2) == 0 {
			conds = append(conds, qual+"channel = "+value([]string{"A", "B"}[rng.IntN(2)]))
			fixed = true
		}
		for range rng.IntN(3) {
			switch op := []string{">=", ">", "<", "<=", "=", "BETWEEN"}[rng.IntN(6)]; op {
			case "BETWEEN":
				a := instant()
				conds = append(conds, qual+`"from" BETWEEN `+value(a)+" AND "+value(a.Add(time.Duration(rng.IntN(3*24))*time.Hour)))
			default:
				conds = append(conds, qual+`"from" `+op+" "+value(instant()))
			}
		}
		rng.Shuffle(len(conds), func(i, j int) { conds[i], conds[j] = conds[j], conds[i] })
		order := ""
		switch rng.IntN(4) {
		case 0:
		case 1:
			order, st.order = ` ORDER BY `+qual+`"from"`, fixed
		case 2:
			order, st.order = ` ORDER BY "from" ASC`, fixed
		default:
			if fixed {
				order, st.order = fmt.Sprintf(` ORDER BY "from" LIMIT %d`, rng.IntN(20)), true
			}
		}
		st.sql = "SELECT " + lists[rng.IntN(len(lists))] + " FROM " + rel + alias + " WHERE " + strings.Join(conds, " AND ") + order
		return st
	}
	opts := []struct {
		name string
		o    ReadOptions
	}{
		{"current", ReadOptions{}},
		{"known at t1", ReadOptions{KnownAt: t1}},
		{"known at t2", ReadOptions{KnownAt: t2}},
		{"as of t1", ReadOptions{AsOf: t1}},
		{"as of t2 known at t1", ReadOptions{AsOf: t2, KnownAt: t1}},
		{"historical", ReadOptions{Mode: ReadHistorical}},
		{"historical known at t1", ReadOptions{Mode: ReadHistorical, KnownAt: t1}},
		{"operational", ReadOptions{Mode: ReadOperational}},
		{"operational known at t1", ReadOptions{Mode: ReadOperational, KnownAt: t1}},
	}
	rows, typed, empty := 0, 0, 0
	for range 60 {
		st := gen()
		for _, o := range opts {
			so := StatementOptions{Table: st.table, Read: o.o, Params: st.params}
			what := fmt.Sprintf("%s, %s %v", o.name, st.sql, st.params)
			gotH, got, isTyped := pointAnswer(t, s, st.sql, so, false)
			wantH, want, wasTyped := pointAnswer(t, s, st.sql, so, true)
			if !isTyped && len(want) == 0 && !wasTyped {
				// Bounds that contradict each other: DuckDB answers.
				empty++
				continue
			}
			if !isTyped || wasTyped {
				t.Fatalf("%s: typed %v, DuckDB alone typed %v: want a point statement and DuckDB", what, isTyped, wasTyped)
			}
			typed++
			if !st.order {
				slices.Sort(got)
				slices.Sort(want)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: the typed answer differs from DuckDB's (%d rows, %d): %s", what, len(got), len(want), firstDiff(got, want))
			}
			if g, w := fmt.Sprintf("%+v", gotH), fmt.Sprintf("%+v", wantH); g != w {
				t.Errorf("%s: header\n%s\nDuckDB's\n%s", what, g, w)
			}
			rows += len(want)
		}
	}
	// As of a snapshot ID: one table's, the default.
	for range 10 {
		st := gen()
		if st.table == "" || st.table == "gas" {
			continue
		}
		so := StatementOptions{Table: "power", Read: ReadOptions{AsOfSnapshot: s1}, Params: st.params}
		gotH, got, isTyped := pointAnswer(t, s, st.sql, so, false)
		wantH, want, _ := pointAnswer(t, s, st.sql, so, true)
		if !isTyped && len(want) == 0 {
			empty++
			continue
		}
		if !st.order {
			slices.Sort(got)
			slices.Sort(want)
		}
		if !isTyped || !slices.Equal(got, want) || fmt.Sprintf("%+v", gotH) != fmt.Sprintf("%+v", wantH) {
			t.Errorf("as of snapshot %d, %s: typed %v, rows %s; headers\n%+v\n%+v", s1, st.sql, isTyped, firstDiff(got, want), gotH, wantH)
		}
		rows += len(want)
	}
	if rows < 2000 {
		t.Fatalf("the oracle compared only %d rows", rows)
	}
	t.Logf("%d rows of %d typed answers compared; %d statements of an empty range", rows, typed, empty)
}

// TestPointSQLShapes: statements near a point statement's shape are run
// by DuckDB, and answer right; those of its shape are typed.
func TestPointSQLShapes(t *testing.T) {
	ctx := t.Context()
	s := newEnv(t).open(t, Options{Tables: []Table{power(), gasDaily()}})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(3)); err != nil {
		t.Fatal(err)
	}
	var rs []Reading
	for slot := range 8 {
		rs = append(rs, qh(0, 0, slot, "A", 1, int64(slot)*1_000_000), qh(0, 0, slot, "B", 1, 5))
	}
	if _, err := s.Write(ctx, "power", rs); err != nil {
		t.Fatal(err)
	}
	m := malo(0)
	bad := m[:10] + string('0'+(m[10]-'0'+1)%10)
	base := `malo_id = '` + m + `' AND obis_code = '1-1:1.29.0'`
	for _, c := range []struct {
		sql   string
		typed bool
		rows  int
	}{
		{`SELECT * FROM readings WHERE ` + base, true, 16},
		{`SELECT "from", value FROM power.readings WHERE ` + base + ` AND channel = 'A' ORDER BY "from" LIMIT 3`, true, 3},
		{`SELECT * FROM readings WHERE ` + base + ` AND "from" >= TIMESTAMPTZ '2026-03-02 00:15:00+00' AND "from" < '2026-03-02 01:00:00'`, true, 6},
		{`SELECT * FROM readings WHERE ` + base + ` AND value > 1`, false, 6},
		{`SELECT * FROM readings WHERE ` + base + ` OR channel = 'A'`, false, 16},
		{`SELECT * FROM readings WHERE (` + base + `) OR false`, false, 16},
		{`SELECT upper(malo_id) FROM readings WHERE ` + base, false, 16},
		{`SELECT value + 1 FROM readings WHERE ` + base, false, 16},
		{`SELECT * FROM readings_versions WHERE ` + base, false, 16},
		{`SELECT r.* FROM readings r JOIN readings q USING (malo_id, obis_code, "from", channel) WHERE r.malo_id = '` + m + `' AND r.obis_code = '1-1:1.29.0'`, false, 16},
		{`SELECT channel, count(*) FROM readings WHERE ` + base + ` GROUP BY channel`, false, 2},
		{`SELECT DISTINCT channel FROM readings WHERE ` + base, false, 2},
		{`SELECT * FROM readings WHERE ` + base + ` ORDER BY "from" DESC`, false, 16},
		{`SELECT * FROM readings WHERE ` + base + ` AND channel = 'A' ORDER BY "from" LIMIT 2 OFFSET 1`, false, 2},
		{`SELECT * FROM readings WHERE ` + base + ` LIMIT 2`, false, 2},
		{`SELECT * FROM readings WHERE ` + base + ` ORDER BY "from" LIMIT 2`, false, 2}, // channels tie
		{`SELECT value AS "from" FROM readings WHERE ` + base + ` ORDER BY "from"`, false, 16},
		{`SELECT MALO_ID FROM readings WHERE ` + base, false, 16},
		{`SELECT * FROM readings WHERE malo_id = '` + bad + `' AND obis_code = '1-1:1.29.0'`, false, 0},
		{`SELECT * FROM readings WHERE ` + base + ` AND quality = 'W'`, false, 0},
		{`SELECT * FROM readings WHERE malo_id = '` + m + `' AND obis_code = '1-1-1.29.0'`, false, 0},
		{`SELECT * FROM readings WHERE malo_id = '` + m + `'`, false, 16},
		{`SELECT * FROM readings WHERE malo_id IN ('` + m + `') AND obis_code = '1-1:1.29.0'`, false, 16},
		{`SELECT * FROM readings WHERE ` + base + ` AND "from" > TIMESTAMPTZ '2026-03-02' AND "from" < TIMESTAMPTZ '2026-03-01'`, false, 0},
		{`SELECT * FROM readings WHERE ` + base + ` AND "from" >= recorded_at`, false, 0},
		{`SELECT * FROM readings WHERE ` + base + ` AND melo_id = 'x'`, false, 0},
		{`SELECT * FROM (SELECT * FROM readings) WHERE ` + base, false, 16},
		{`WITH x AS (SELECT * FROM readings) SELECT * FROM x WHERE ` + base, false, 16},
		{`SELECT * FROM readings WHERE ` + base + ` UNION ALL SELECT * FROM readings WHERE false`, false, 16},
		{`SELECT *, (SELECT count(*) FROM system.tables) FROM readings WHERE ` + base, false, 16},
		{`SELECT * EXCLUDE (value) FROM readings WHERE ` + base, false, 16},
		{`SELECT * FROM readings WHERE ` + base + ` USING SAMPLE 100%`, false, 16},
		{`SELECT * FROM readings TABLESAMPLE 100% WHERE ` + base, false, 16},
	} {
		o := StatementOptions{Table: "power"}
		gotH, got, typed := pointAnswer(t, s, c.sql, o, false)
		wantH, want, _ := pointAnswer(t, s, c.sql, o, true)
		if typed != c.typed {
			t.Errorf("%s: typed %v, want %v", c.sql, typed, c.typed)
		}
		slices.Sort(got)
		slices.Sort(want)
		if len(want) != c.rows || !slices.Equal(got, want) || fmt.Sprintf("%+v", gotH) != fmt.Sprintf("%+v", wantH) {
			t.Errorf("%s: %d rows, DuckDB %d, want %d: %s; headers\n%+v\n%+v", c.sql, len(got), len(want), c.rows, firstDiff(got, want), gotH, wantH)
		}
	}
}
