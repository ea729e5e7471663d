package hot

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

func TestEnsure(t *testing.T) {
	h, pool := newTier(t, Options{})
	ctx := context.Background()
	tab := lastgang("lastgang")
	tab.Columns = []series.Column{{Name: "channel", Identity: true}, {Name: "note"}}
	for range 2 {
		if err := h.Ensure(ctx, tab); err != nil {
			t.Fatal(err)
		}
	}
	var strategy, key, mergeKey string
	err := pool.QueryRow(ctx, `
SELECT p.partstrat, pg_get_partkeydef(p.partrelid),
	(SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c WHERE c.conrelid = p.partrelid AND c.contype = 'p'),
	(SELECT array_to_string(merge_key, ',') FROM meterstore.hot_tables WHERE name = 'lastgang')
FROM pg_partitioned_table p WHERE p.partrelid = 'meterstore.lastgang'::regclass`).Scan(&strategy, &key, &mergeKey, new(string))
	if err != nil {
		t.Fatal(err)
	}
	var meta string
	if err := pool.QueryRow(ctx, `SELECT array_to_string(merge_key, ',') FROM meterstore.hot_tables WHERE name = 'lastgang'`).Scan(&meta); err != nil {
		t.Fatal(err)
	}
	// A new table of integrity statement (auto) is in the step layout:
	// its series dictionary holds the merge key but from, per bucket, the
	// partitions range over the step, and the primary key is the series,
	// step and version.
	var seriesKey string
	if err := pool.QueryRow(ctx, `SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'meterstore.lastgang_series'::regclass AND contype = 'u'`).Scan(&seriesKey); err != nil {
		t.Fatal(err)
	}
	if strategy != "r" || key != `RANGE (step)` || mergeKey != `PRIMARY KEY (series, step, version)` || meta != "malo_id,obis_code,from,channel" ||
		seriesKey != `UNIQUE (bucket, malo_id, obis_code, channel)` {
		t.Fatalf("strategy %q, key %q, primary key %q, merge key %q, series key %q", strategy, key, mergeKey, meta, seriesKey)
	}
	// In the rows layout the primary key is the merge key and version.
	rows := lastgang("lastgang_rows")
	rows.Columns, rows.Integrity = tab.Columns, series.IntegrityExclusion
	if err := h.Ensure(ctx, rows); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'meterstore.lastgang_rows'::regclass AND contype = 'p'`).Scan(&mergeKey); err != nil {
		t.Fatal(err)
	}
	if mergeKey != `PRIMARY KEY (malo_id, obis_code, "from", channel, version)` {
		t.Fatalf("rows layout: primary key %q", mergeKey)
	}

	// What changes no stored row may change.
	again := *tab
	again.Headroom, again.Commodity = 72*time.Hour, 0
	if err := h.Ensure(ctx, &again); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*series.Table){
		"time model":  func(t *series.Table) { t.TimeModel, t.Resolutions = series.Point, nil },
		"width":       func(t *series.Table) { t.Width = series.Monthly },
		"integrity":   func(t *series.Table) { t.Integrity = series.IntegrityWrite },
		"resolutions": func(t *series.Table) { t.Resolutions = nil },
	} {
		t.Run(name, func(t *testing.T) {
			changed := *tab
			changed.Columns = append([]series.Column(nil), tab.Columns...)
			change(&changed)
			err := h.Ensure(ctx, &changed)
			wantError(t, err, series.InvalidConfig)
			if !strings.Contains(err.Error(), "declared differently") {
				t.Fatal(err)
			}
		})
	}
	// Column changes series.Evolve refuses quarantine (evolve_test.go).
	for name, change := range map[string]func(*series.Table){
		"identity": func(t *series.Table) { t.Columns = []series.Column{{Name: "channel"}, {Name: "note"}} },
		"more identity": func(t *series.Table) {
			t.Columns = append(t.Columns[:1:1], series.Column{Name: "note", Identity: true})
		},
		"coded values": func(t *series.Table) {
			t.Columns = []series.Column{{Name: "channel", Identity: true}, {Name: "note", Values: []string{"x"}}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			changed := *tab
			changed.Columns = append([]series.Column(nil), tab.Columns...)
			change(&changed)
			var q *series.QuarantineError
			if err := h.Ensure(ctx, &changed); !errors.As(err, &q) {
				t.Fatalf("Ensure: %v, want a quarantine", err)
			}
		})
	}
}

func TestEnsureRefusesForeignRelation(t *testing.T) {
	h, pool := newTier(t, Options{})
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE SCHEMA meterstore; CREATE TABLE meterstore.lastgang (x int)`); err != nil {
		t.Fatal(err)
	}
	wantError(t, h.Ensure(ctx, lastgang("lastgang")), series.InvalidConfig)
}

func TestEnsureMissingRelation(t *testing.T) {
	h, pool := newTier(t, Options{})
	ctx := context.Background()
	tab := lastgang("lastgang")
	if err := h.Ensure(ctx, tab); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DROP TABLE meterstore.lastgang`); err != nil {
		t.Fatal(err)
	}
	wantError(t, h.Ensure(ctx, tab), series.InvariantViolation)
}

// TestQuotedNames uses a table and columns named by SQL keywords.
func TestQuotedNames(t *testing.T) {
	h, _ := newTier(t, Options{Schema: "select"})
	tab := lastgang("order")
	tab.Columns = []series.Column{{Name: "group", Identity: true}, {Name: "from_to", Type: series.BigInt}}
	declare(t, h, tab)
	rows := meterDay(1, 1)
	for i := range rows {
		rows[i].Extra = map[string]string{"group": "g", "from_to": "7"}
	}
	mustWrite(t, h, tab, rows)
	if got := scanAll(t, h, tab); len(got) != 96 || got[0].Extra["from_to"] != "7" {
		t.Fatalf("scanned %d rows: %+v", len(got), got[:1])
	}
	if _, err := h.Partitions(context.Background(), tab); err != nil {
		t.Fatal(err)
	}
}

// TestSQLChecks inserts past Write, as another client would: the CHECK
// constraints refuse what Write refuses.
func TestSQLChecks(t *testing.T) {
	for _, i := range []series.Integrity{series.IntegrityExclusion, series.IntegrityStatement} {
		t.Run(i.String(), func(t *testing.T) { testSQLChecks(t, i) })
	}
}

func testSQLChecks(t *testing.T, integrity series.Integrity) {
	h, pool := newTier(t, Options{})
	tab := lastgang("lastgang")
	tab.Integrity = integrity
	declare(t, h, tab)
	ctx := context.Background()
	version := 7 // each insert its own, so that only the checks can refuse it
	insert := func(malo, melo, obis, scope string) error {
		version++
		var m *string
		if melo != "" {
			m = &melo
		}
		r := qhRow(malo, "kWh", day, version, scope, 1.5)
		r.melo, r.obis = m, obis
		return plainInsert(ctx, pool, "meterstore.lastgang", "meterstore.lastgang", r)
	}
	good := []string{malo(1), "DE0001234567890123456789012345678", "1-1:1.29.0*255", "9900000000003:2026-03"}
	if err := insert(good[0], good[1], good[2], good[3]); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ col, value, constraint string }{
		{"malo", "10000000000", "malo_id_check"},
		{"malo", "0" + malo(2)[1:], "malo_id_check"},
		{"malo", malo(2) + "0", "malo_id_check"},
		{"melo", "DE000123456789012345678901234567", "melo_id_check"},
		{"melo", "de0001234567890123456789012345678", "melo_id_check"},
		{"obis", "1-1:1.29", "obis_code_check"},
		{"obis", "1-01:1.29.0", "obis_code_check"},
		{"obis", "1-1:1.29.0*", "obis_code_check"},
		{"scope", "9900000000003:2026-13", "version_scope_check"},
		{"scope", "9900 000000003:2026-03", "version_scope_check"},
		{"scope", "a:b:2026-03", "version_scope_check"},
	} {
		args := append([]string(nil), good...)
		args[map[string]int{"malo": 0, "melo": 1, "obis": 2, "scope": 3}[c.col]] = c.value
		err := insert(args[0], args[1], args[2], args[3])
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "23514" || pgErr.ConstraintName != c.constraint {
			t.Errorf("%s %q: %v, want a violation of %s", c.col, c.value, err, c.constraint)
		}
	}

	// The SQL check digit agrees with Go's on random ids.
	rng := rand.New(rand.NewPCG(1, 2))
	var ids []string
	for range 2000 {
		ids = append(ids, fmt.Sprintf("%011d", rng.Int64N(1e11)))
	}
	rows, err := pool.Query(ctx, `SELECT id, meterstore.malo_valid(id) FROM unnest($1::text[]) AS id`, ids)
	if err != nil {
		t.Fatal(err)
	}
	valid := 0
	for rows.Next() {
		var id string
		var ok bool
		if err := rows.Scan(&id, &ok); err != nil {
			t.Fatal(err)
		}
		_, goErr := metering.ParseMaLo(id)
		if ok != (goErr == nil) {
			t.Fatalf("%s: SQL says %v, Go says %v", id, ok, goErr)
		}
		if ok {
			valid++
		}
	}
	if rows.Err() != nil || valid < 100 {
		t.Fatalf("%d of %d valid: %v", valid, len(ids), rows.Err())
	}
}

// TestExclusionConstraints inserts past Write: the exclusion constraints
// refuse overlapping intervals and a second network operator from any
// client; a NoExclusion table relies on Write and takes them.
func TestExclusionConstraints(t *testing.T) {
	for _, noExcl := range []bool{false, true} {
		t.Run(fmt.Sprint("write=", noExcl), func(t *testing.T) {
			h, pool := newTier(t, Options{})
			tab := lastgang("lastgang")
			tab.Resolutions = []metering.Resolution{metering.QuarterHour, metering.Hour}
			tab.Integrity = series.IntegrityExclusion
			if noExcl {
				tab.Integrity = series.IntegrityWrite
			}
			declare(t, h, tab)
			ctx := context.Background()
			rows := meterDay(1, 5)
			mustWrite(t, h, tab, append(rows[:4:4], rows[5:]...)) // not 01:00-01:15
			insert := func(from, to time.Time, res string, version int, scope string) error {
				_, err := pool.Exec(ctx, `INSERT INTO meterstore.lastgang (malo_id, obis_code, sparte, "from", "to", value, unit, quality, resolution, version, version_scope, balancing_day)
VALUES ($1, '1-1:1.29.0', 'STROM', $2, $3, 1.5, 'kWh', '220', $4, $5, $6, '2026-03-02')`,
					malo(1), from, to, res, version, scope)
				return err
			}
			hour := day.Add(time.Hour)
			for _, c := range []struct {
				what string
				err  error
			}{
				{"overlap", insert(hour, hour.Add(time.Hour), "PT1H", 5, "9900000000003:2026-03")},
				{"operator", insert(day, day.Add(15*time.Minute), "PT15M", 6, "9900000000010:2026-03")},
			} {
				var pgErr *pgconn.PgError
				refused := errors.As(c.err, &pgErr) && pgErr.Code == "23P01"
				if refused == noExcl || (!refused && c.err != nil) {
					t.Errorf("%s: %v", c.what, c.err)
				}
			}
		})
	}
}

// TestGridCheck: the server's CHECK and Write agree on which intervals lie
// on the grid of their resolution, for every resolution, electricity and gas.
func TestGridCheck(t *testing.T) {
	h, pool := newTier(t, Options{})
	tab := lastgang("grid")
	tab.Resolutions = nil // all
	tab.Width = series.Monthly
	tab.Integrity = series.IntegrityWrite
	ctx := context.Background()
	if err := h.Ensure(ctx, tab); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CreatePartitions(ctx, tab, time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	cal, _ := metering.NewCalendar()
	d := metering.Date{Year: 2026, Month: time.October, Day: 25} // 25 hours
	type iv struct {
		res      metering.Resolution
		com      metering.Commodity
		from, to time.Time
		ok       bool
	}
	q := cal.DayStart(d).Add(2 * time.Hour)
	cases := []iv{
		{metering.QuarterHour, metering.Electricity, q, q.Add(15 * time.Minute), true},
		{metering.QuarterHour, metering.Electricity, q.Add(time.Minute), q.Add(16 * time.Minute), false},
		{metering.QuarterHour, metering.Electricity, q.Add(time.Microsecond), q.Add(15*time.Minute + time.Microsecond), false},
		{metering.FiveMinutes, metering.Electricity, q.Add(5 * time.Minute), q.Add(10 * time.Minute), true},
		{metering.HalfHour, metering.Electricity, q.Add(15 * time.Minute), q.Add(45 * time.Minute), false},
		{metering.Hour, metering.Electricity, q, q.Add(time.Hour), true},
		{metering.Hour, metering.Electricity, q.Add(30 * time.Minute), q.Add(90 * time.Minute), false},
		{metering.Day, metering.Electricity, cal.DayStart(d), cal.DayEnd(d), true},
		{metering.Day, metering.Electricity, cal.DayStart(d), cal.DayStart(d).Add(24 * time.Hour), false},
		{metering.Day, metering.Gas, cal.GasDayStart(d), cal.GasDayEnd(d), true},
		{metering.Day, metering.Gas, cal.DayStart(d), cal.DayEnd(d), false},
		{metering.Month, metering.Electricity, cal.MonthStart(2026, 3, metering.Electricity), cal.MonthStart(2026, 4, metering.Electricity), true},
		{metering.Month, metering.Gas, cal.MonthStart(2026, 3, metering.Gas), cal.MonthStart(2026, 4, metering.Gas), true},
		{metering.Month, metering.Gas, cal.MonthStart(2026, 3, metering.Electricity), cal.MonthStart(2026, 4, metering.Electricity), false},
		{metering.Month, metering.Electricity, cal.DayStart(d), cal.DayStart(d).AddDate(0, 1, 0), false},
		{metering.Year, metering.Electricity, cal.MonthStart(2026, 1, metering.Electricity), cal.MonthStart(2027, 1, metering.Electricity), true},
		{metering.Year, metering.Electricity, cal.MonthStart(2026, 2, metering.Electricity), cal.MonthStart(2027, 2, metering.Electricity), false},
	}
	for i, c := range cases {
		r := qh(i, 0, 1, 1)
		r.Resolution, r.Commodity, r.From, r.To = c.res, c.com, c.from, c.to
		if c.com == metering.Gas {
			r.OBIS = "7-20:3.0.0"
		}
		_, goErr := h.prepare(tab, []series.Reading{r})
		_, sqlErr := pool.Exec(ctx, `INSERT INTO meterstore.grid (malo_id, obis_code, sparte, "from", "to", value, unit, quality, resolution, version, version_scope, balancing_day)
VALUES ($1, $2, $3, $4, $5, 1, 'kWh', '220', $6, 1, '9900000000003:2026-03', '2026-01-01')`, r.MaLo, r.OBIS, c.com.String(), c.from, c.to, c.res.String())
		var pgErr *pgconn.PgError
		if (goErr == nil) != c.ok || (sqlErr == nil) != c.ok || sqlErr != nil && (!errors.As(sqlErr, &pgErr) || pgErr.ConstraintName != "interval_valid") {
			t.Errorf("%v %v %v..%v: Write says %v, the server %v; want ok=%v", c.res, c.com, c.from, c.to, goErr, sqlErr, c.ok)
		}
	}
}

// TestEnsureReplacesFunction: a database declared by an earlier version,
// whose malo_valid spells the rule differently, gets the current body when
// a table is declared again, and keeps working: its constraints call the
// function by oid.
func TestEnsureReplacesFunction(t *testing.T) {
	h, pool := newTier(t, Options{})
	tab := lastgang("lastgang")
	declare(t, h, tab)
	ctx := context.Background()
	// The body of the first version: the digits picked out with substr.
	var sum []string
	for i := 1; i <= 10; i++ {
		w := ""
		if i%2 == 0 {
			w = "2 * "
		}
		sum = append(sum, fmt.Sprintf("%sascii(substr(id, %d, 1))", w, i))
	}
	if _, err := pool.Exec(ctx, `CREATE OR REPLACE FUNCTION meterstore.malo_valid(id text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT CASE WHEN length(id) = 11 AND id ~ '^[1-9][0-9]*$'
	THEN (10 - (`+strings.Join(sum, " + ")+` - 720) % 10) % 10 = ascii(substr(id, 11, 1)) - 48
	ELSE false END
$$`); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, h, tab, meterDay(1, 1))
	if err := h.Ensure(ctx, tab); err != nil {
		t.Fatal(err)
	}
	var body string
	if err := pool.QueryRow(ctx, `SELECT prosrc FROM pg_proc WHERE oid = 'meterstore.malo_valid(text)'::regprocedure`).Scan(&body); err != nil || body != maloValidBody {
		t.Fatalf("body %q, %v", body, err)
	}
	mustWrite(t, h, tab, meterDay(2, 1))
	err := plainInsert(ctx, pool, "meterstore.lastgang", "meterstore.lastgang", qhRow("10000000000", "kWh", day, 7, "9900000000003:2026-03", 1))
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.ConstraintName != "malo_id_check" {
		t.Fatalf("a bad check digit: %v", err)
	}
	// Declaring again changes nothing.
	if err := h.Ensure(ctx, tab); err != nil {
		t.Fatal(err)
	}
}
