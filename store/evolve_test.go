package store

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

// withColumns returns power declared with its identity column and cols.
func withColumns(cols ...series.Column) Table {
	t := power()
	t.Columns = append(t.Columns, cols...)
	return t
}

// coldColumns returns the column names of the current schema of the cold
// table name.
func coldColumns(t *testing.T, e *testEnv, name string) []string {
	t.Helper()
	ice, err := e.cat.LoadTable(t.Context(), icetable.Identifier{"meterstore", name})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range ice.Schema().Fields() {
		out = append(out, f.Name)
	}
	return out
}

// hotColumns returns the column names of the hot parent of name.
func hotColumns(t *testing.T, e *testEnv, name string) []string {
	t.Helper()
	rows, err := e.pool.Query(t.Context(), `SELECT attname FROM pg_attribute
WHERE attrelid = ('meterstore.' || $1)::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, name)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// tariffs returns "from|tariff" of every reading of power, by from, with
// "-" for NULL.
func tariffs(t *testing.T, s *Store) []string {
	t.Helper()
	res := mustQuery(t, s, `SELECT "from", tariff FROM readings ORDER BY "from"`)
	var out []string
	for _, r := range res.Rows {
		v := "-"
		if r[1] != nil {
			v = r[1].(string)
		}
		out = append(out, r[0].(time.Time).UTC().Format("0102T1504")+"|"+v)
	}
	return out
}

func withTariff(r Reading, v string) Reading {
	r.Extra = map[string]string{"channel": r.Extra["channel"], "tariff": v}
	return r
}

// TestEvolveAddThenUndeclare adds a nullable column to a table with rows
// in both tiers, then opens the store on the declaration without it again:
// each time both tiers follow, queries over both show the column (NULL
// for rows written before) or no longer show it, and writes and archival
// go on. The undeclared column stays in both tiers with its values: the
// older declaration writes NULL there and archives no partition holding a
// value in it.
func TestEvolveAddThenUndeclare(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	s1 := e.open(t, Options{})
	mustWrite(t, s1, []Reading{qh(1, 0, 1, "A", 1, 1000), qh(1, 1, 1, "A", 1, 1000), qh(1, 2, 1, "A", 1, 1000)})
	if _, err := s1.Archive(ctx, "power", dayN(4)); err != nil { // days 0 and 1: W = day 2
		t.Fatal(err)
	}

	tariff := series.Column{Name: "tariff", Values: []string{"HT", "NT"}}
	s2 := e.open(t, Options{Tables: []Table{withColumns(tariff)}})
	if cols := hotColumns(t, e, "power"); !slices.Contains(cols, "tariff") {
		t.Fatalf("hot columns %v, want tariff", cols)
	}
	if cols := coldColumns(t, e, "power"); !slices.Contains(cols, "tariff") {
		t.Fatalf("cold columns %v, want tariff", cols)
	}
	if _, err := s2.Write(ctx, "power", []Reading{withTariff(qh(1, 2, 5, "A", 1, 1000), "HT"), withTariff(qh(1, 3, 5, "A", 1, 1000), "NT")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Write(ctx, "power", []Reading{withTariff(qh(1, 3, 6, "A", 1, 1000), "XX")}); err == nil {
		t.Fatal("a tariff outside its values was written")
	}
	// Cold rows of days 0 and 1, hot ones of days 2 and 3.
	want := []string{"0302T0015|-", "0303T0015|-", "0304T0015|-", "0304T0115|HT", "0305T0115|NT"}
	if got := tariffs(t, s2); !slices.Equal(got, want) {
		t.Fatalf("readings before the archival: %v, want %v", got, want)
	}
	// Days 2 and 3 to the cold tier: rows with and without a tariff in
	// one window; a row of day 4 stays hot.
	if _, err := s2.Write(ctx, "power", []Reading{withTariff(qh(1, 4, 5, "A", 1, 1000), "HT")}); err != nil {
		t.Fatal(err)
	}
	if out, err := s2.Archive(ctx, "power", dayN(6)); err != nil || len(out.Windows) != 2 {
		t.Fatalf("archive: %+v, %v", out, err)
	}
	want = append(want, "0306T0115|HT")
	if got := tariffs(t, s2); !slices.Equal(got, want) {
		t.Fatalf("readings after the archival: %v, want %v", got, want)
	}
	res := mustQuery(t, s2, `SELECT count(*) FROM readings_versions WHERE tariff IS NOT NULL AND "from" < `+ts(dayN(4)))
	if res.Rows[0][0] != int64(2) {
		t.Fatalf("%v cold rows carry a tariff, want 2", res.Rows[0][0])
	}

	// Undeclared: the older declaration writes, but does not archive the
	// tariff of day 4, which it cannot carry: it defers to the
	// declaration with the column, which does.
	early := e.open(t, Options{})
	mustWrite(t, early, []Reading{qh(1, 5, 5, "A", 1, 1000)})
	if out, err := early.Archive(ctx, "power", dayN(7)); err != nil || out.Status != ArchiveDeferred || !strings.Contains(out.Waiting, `"tariff"`) || len(out.Windows) != 0 {
		t.Fatalf("archive of day 4 without its tariff declared: %+v, %v; want deferred naming the column", out, err)
	}
	if out, err := s2.Archive(ctx, "power", dayN(7)); err != nil || len(out.Windows) != 1 {
		t.Fatalf("archive of day 4: %+v, %v", out, err)
	}
	s3 := e.open(t, Options{})
	if cols := hotColumns(t, e, "power"); !slices.Contains(cols, "tariff") {
		t.Fatalf("hot columns %v after the column was undeclared: it was dropped", cols)
	}
	if cols := coldColumns(t, e, "power"); !slices.Contains(cols, "tariff") {
		t.Fatalf("cold columns %v after the column was undeclared: it was dropped", cols)
	}
	if _, err := s3.Query(ctx, "power", `SELECT tariff FROM readings`); err == nil {
		t.Fatal("an undeclared column is still queried")
	}
	res = mustQuery(t, s3, `SELECT * FROM readings_versions`)
	if slices.Contains(res.Columns, "tariff") {
		t.Fatalf("columns %v after the column was undeclared", res.Columns)
	}
	if len(res.Rows) != 7 {
		t.Fatalf("%d readings after the column was undeclared, want 7", len(res.Rows))
	}
	if out, err := s3.Archive(ctx, "power", dayN(8)); err != nil || len(out.Windows) != 1 {
		t.Fatalf("archive of day 5, without tariffs: %+v, %v", out, err)
	}
	if n := mustQuery(t, s3, `SELECT count(*) FROM readings WHERE "from" < `+ts(dayN(6))).Rows[0][0]; n != int64(7) {
		t.Fatalf("%v archived readings, want 7", n)
	}
	// Declared again, every tariff ever written is there.
	s4 := e.open(t, Options{Tables: []Table{withColumns(tariff)}})
	want = append(want, "0307T0115|-")
	if got := tariffs(t, s4); !slices.Equal(got, want) {
		t.Fatalf("readings with the tariff declared again: %v, want %v", got, want)
	}
}

// TestEvolveConverges applies an evolution to the hot tier alone, as a
// process that died before the cold step leaves it: opening the store
// again brings the cold tier in step. A column no longer declared stays in
// both tiers.
func TestEvolveConverges(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	s1 := e.open(t, Options{})
	mustWrite(t, s1, []Reading{qh(1, 0, 1, "A", 1, 1000), qh(1, 2, 1, "A", 1, 1000)})
	if _, err := s1.Archive(ctx, "power", dayN(3)); err != nil {
		t.Fatal(err)
	}
	note := series.Column{Name: "note"}
	added := withColumns(note)
	if err := s1.hot.Ensure(ctx, &added); err != nil {
		t.Fatal(err)
	}
	if cols := coldColumns(t, e, "power"); slices.Contains(cols, "note") {
		t.Fatalf("the hot step alone changed the cold tier: %v", cols)
	}
	s2 := e.open(t, Options{Tables: []Table{added}})
	if cols := coldColumns(t, e, "power"); !slices.Contains(cols, "note") {
		t.Fatalf("cold columns %v, want note", cols)
	}
	r := qh(1, 2, 2, "A", 1, 1000)
	r.Extra["note"] = "n"
	if _, err := s2.Write(ctx, "power", []Reading{r}); err != nil {
		t.Fatal(err)
	}
	if n := mustQuery(t, s2, `SELECT count(note) FROM readings`).Rows[0][0]; n != int64(1) {
		t.Fatalf("%v notes, want 1", n)
	}
	if _, err := s2.Archive(ctx, "power", dayN(5)); err != nil {
		t.Fatal(err)
	}
	plain := power()
	if err := s2.hot.Ensure(ctx, &plain); err != nil {
		t.Fatal(err)
	}
	s3 := e.open(t, Options{})
	if cols := coldColumns(t, e, "power"); !slices.Contains(cols, "note") {
		t.Fatalf("cold columns %v after the column was undeclared", cols)
	}
	if cols := hotColumns(t, e, "power"); !slices.Contains(cols, "note") {
		t.Fatalf("hot columns %v after the column was undeclared", cols)
	}
	if n := mustQuery(t, s3, `SELECT count(*) FROM readings`).Rows[0][0]; n != int64(3) {
		t.Fatalf("%v readings, want 3", n)
	}
}

// TestEvolveQuarantinesAlone declares changes series.Evolve refuses: the
// table is quarantined alone (Status and system.tables say why, archival
// is refused and W stays), its relation and declaration stay as they
// were, and it goes on taking every delivery its stored columns can hold
// into PostgreSQL and answering it. A delivery they cannot hold is refused
// as retryable, never as permanent, so a producer keeps it until an
// operator resolves the quarantine. Another table of the same store
// ingests and archives.
func TestEvolveQuarantinesAlone(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	other := power()
	other.Name = "other"
	tariff := series.Column{Name: "tariff", Values: []string{"HT", "NT"}}
	base := withColumns(series.Column{Name: "note"}, tariff)
	s1 := e.open(t, Options{Tables: []Table{base, other}})
	mustWrite(t, s1, []Reading{qh(1, 0, 1, "A", 1, 1000), qh(1, 3, 1, "A", 1, 1000)})
	if _, err := s1.Archive(ctx, "power", dayN(3)); err != nil {
		t.Fatal(err)
	}
	w0, _, err := s1.Watermark(ctx, "power")
	if err != nil {
		t.Fatal(err)
	}
	hotBefore, coldBefore := hotColumns(t, e, "power"), coldColumns(t, e, "power")
	var defBefore string
	if err := e.pool.QueryRow(ctx, `SELECT definition::text FROM meterstore.hot_tables WHERE name = 'power'`).Scan(&defBefore); err != nil {
		t.Fatal(err)
	}
	withExtra := func(r Reading, kv ...string) Reading {
		for i := 0; i < len(kv); i += 2 {
			r.Extra[kv[i]] = kv[i+1]
		}
		return r
	}
	readings, day := 2, 3
	for i, tc := range []struct {
		name, reason string
		decl         Table
		// held is a delivery the declaration accepts and the stored
		// columns hold; refused one they cannot hold; either may be unset.
		held, refused []Reading
	}{
		{"type change", "type text before, bigint now",
			withColumns(series.Column{Name: "note", Type: series.BigInt}, tariff),
			[]Reading{withExtra(qh(2, 3, 2, "A", 1, 1000), "note", "17")}, nil},
		{"values widened", "values (HT, NT) before, (HT, NT, ST) now",
			withColumns(series.Column{Name: "note"}, series.Column{Name: "tariff", Values: []string{"HT", "NT", "ST"}}),
			[]Reading{withExtra(qh(3, 3, 2, "A", 1, 1000), "tariff", "HT")}, []Reading{withExtra(qh(3, 3, 3, "A", 1, 1000), "tariff", "ST")}},
		{"new identity", "new identity column",
			withColumns(series.Column{Name: "note"}, tariff, series.Column{Name: "phase", Identity: true}),
			nil, []Reading{withExtra(qh(4, 3, 2, "A", 1, 1000), "phase", "L1")}},
		{"identity dropped", "identity column \"channel\" is dropped", func() Table {
			t := base
			t.Columns = []series.Column{{Name: "note"}, tariff}
			return t
		}(), nil, func() []Reading {
			r := qh(5, 3, 2, "A", 1, 1000)
			r.Extra = map[string]string{"note": "n"}
			return []Reading{r}
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := e.open(t, Options{Tables: []Table{tc.decl, other}})
			if tc.held != nil {
				if _, err := s.Write(ctx, "power", tc.held); err != nil {
					t.Fatalf("a delivery the stored columns hold, into the quarantined table: %v", err)
				}
				readings++
				res := mustQuery(t, s, `SELECT count(*) FROM readings WHERE malo_id = '`+tc.held[0].MaLo+`'`)
				if res.Rows[0][0] != int64(len(tc.held)) {
					t.Fatalf("the quarantined table answers %v of the delivery's readings, want %d", res.Rows[0][0], len(tc.held))
				}
			}
			if tc.refused != nil {
				_, err := s.Write(ctx, "power", tc.refused)
				var q *QuarantineError
				if !errors.As(err, &q) || !IsRetryable(err) || !strings.Contains(err.Error(), "quarantined") {
					t.Fatalf("a delivery the stored columns cannot hold: %v, want a retryable refusal naming the quarantine", err)
				}
			}
			if out, err := s.Archive(ctx, "power", dayN(6+i)); !errors.As(err, new(*QuarantineError)) || out.Status != ArchiveQuarantined || len(out.Windows) != 0 {
				t.Fatalf("archive of the quarantined table: %+v, %v", out, err)
			}
			// A maintenance cycle keeps its partitions ahead all the same.
			for _, to := range s.Maintenance().Cycle(ctx, dayN(6+i)).Tables {
				if to.Table == "power" && (to.Archive.Status != ArchiveQuarantined || to.Err == nil || strings.Contains(to.Err.Error(), "partitions:")) {
					t.Fatalf("maintenance of the quarantined table: %v, %v", to.Archive.Status, to.Err)
				}
			}
			if w, _, err := s.Watermark(ctx, "power"); err != nil || !w.Equal(w0) {
				t.Fatalf("W of the quarantined table %v (%v), want %v", w, err, w0)
			}
			var st TableStatus
			for _, x := range s.Status(ctx, dayN(6)) {
				if x.Table == "power" {
					st = x
				}
			}
			if st.Healthy || st.Err == nil || !strings.Contains(st.Err.Error(), tc.reason) {
				t.Fatalf("status of the quarantined table: healthy %v, %v; want a reason saying %q", st.Healthy, st.Err, tc.reason)
			}
			if err := s.RefreshSystemTables(ctx, dayN(6)); err != nil && !strings.Contains(err.Error(), "power") {
				t.Fatal(err)
			}
			res := mustQueryOn(t, s, "other", `SELECT healthy, error FROM system.tables WHERE "table" = 'power'`)
			if msg, _ := res.Rows[0][1].(string); res.Rows[0][0] != false || !strings.Contains(msg, "quarantined") || !strings.Contains(msg, tc.reason) {
				t.Fatalf("system.tables of the quarantined table: %v", res.Rows)
			}

			// The other table ingests and archives.
			day++
			if _, err := s.Write(ctx, "other", []Reading{qh(1, day, 1, "A", 1, 1000)}); err != nil {
				t.Fatal(err)
			}
			if out, err := s.Archive(ctx, "other", dayN(day+3)); err != nil || len(out.Windows) == 0 {
				t.Fatalf("archive of the other table: %+v, %v", out, err)
			}
			if n := mustQueryOn(t, s, "other", `SELECT count(*) FROM readings WHERE "from" < `+ts(dayN(day+1))).Rows[0][0]; n != int64(day-3) {
				t.Fatalf("the other table has %v readings, want %d", n, day-3)
			}

			// Its relation and declaration are as they were; it holds what
			// it took.
			var def string
			if err := e.pool.QueryRow(ctx, `SELECT definition::text FROM meterstore.hot_tables WHERE name = 'power'`).Scan(&def); err != nil {
				t.Fatal(err)
			}
			if def != defBefore || !slices.Equal(hotColumns(t, e, "power"), hotBefore) || !slices.Equal(coldColumns(t, e, "power"), coldBefore) {
				t.Fatalf("the quarantined table changed: %s, hot %v, cold %v", def, hotColumns(t, e, "power"), coldColumns(t, e, "power"))
			}
			if n := mustQuery(t, s1, `SELECT count(*) FROM readings`).Rows[0][0]; n != int64(readings) {
				t.Fatalf("the quarantined table has %v readings, want %d", n, readings)
			}
		})
	}
}

// TestQuarantineLifts quarantines a table whose declaration widens a
// column's coded values, which is an operator's change: the next
// maintenance cycle after the operator has made it applies the declaration,
// without a restart, and the delivery refused before goes in.
func TestQuarantineLifts(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	e.open(t, Options{Tables: []Table{withColumns(series.Column{Name: "tariff", Values: []string{"HT", "NT"}})}})
	s := e.open(t, Options{Tables: []Table{withColumns(series.Column{Name: "tariff", Values: []string{"HT", "NT", "ST"}})}})
	st := withTariff(qh(1, 0, 1, "A", 1, 1000), "ST")
	if _, err := s.Write(ctx, "power", []Reading{st}); !IsRetryable(err) || !errors.As(err, new(*QuarantineError)) {
		t.Fatalf("a tariff the stored CHECK refuses: %v, want a retryable refusal", err)
	}
	m := s.Maintenance()
	if out := m.Cycle(ctx, dayN(0)); out.Tables[0].Archive.Status != ArchiveQuarantined {
		t.Fatalf("cycle before the migration: %+v", out.Tables[0])
	}
	for _, stmt := range []string{
		`ALTER TABLE meterstore.power DROP CONSTRAINT tariff_check`,
		`ALTER TABLE meterstore.power ADD CONSTRAINT tariff_check CHECK (tariff IN ('HT', 'NT', 'ST'))`,
		`UPDATE meterstore.hot_tables SET definition = jsonb_set(definition, '{columns,1,values}', '["HT", "NT", "ST"]') WHERE name = 'power'`,
	} {
		if _, err := e.pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("the operator's migration: %s: %v", stmt, err)
		}
	}
	out := m.Cycle(ctx, dayN(0))
	if to := out.Tables[0]; to.Archive.Status == ArchiveQuarantined || !to.Healthy() {
		t.Fatalf("cycle after the migration: %v, %v, status %+v", to.Archive.Status, to.Err, to.Status)
	}
	mustWrite(t, s, []Reading{st})
	if got := tariffs(t, s); !slices.Equal(got, []string{"0302T0015|ST"}) {
		t.Fatalf("tariffs after the quarantine lifted: %v", got)
	}
}

// TestQuarantinedColdTier quarantines a table's cold tier out of band (a
// foreign tool adds a NOT NULL column): deliveries at or above W still go
// to PostgreSQL and are answered; a late correction below W, which needs
// the cold tier, is refused as retryable, naming the quarantine; archival
// is refused and W stays.
func TestQuarantinedColdTier(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	s := e.open(t, Options{})
	mustWrite(t, s, []Reading{qh(1, 0, 1, "A", 1, 1000), qh(1, 3, 1, "A", 1, 1000)})
	if _, err := s.Archive(ctx, "power", dayN(3)); err != nil {
		t.Fatal(err)
	}
	w0, _, err := s.Watermark(ctx, "power")
	if err != nil {
		t.Fatal(err)
	}
	ice, err := e.cat.LoadTable(ctx, icetable.Identifier{"meterstore", "power"})
	if err != nil {
		t.Fatal(err)
	}
	tx := ice.NewTransaction()
	if err := tx.UpdateSchema(true, true).AddColumn([]string{"audit"}, iceberg.PrimitiveTypes.String, "", true, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	q := e.open(t, Options{})
	if _, err := q.Write(ctx, "power", []Reading{qh(2, 3, 1, "A", 1, 1000)}); err != nil {
		t.Fatalf("a delivery above W into the quarantined table: %v", err)
	}
	if n := mustQuery(t, q, `SELECT count(*) FROM readings`).Rows[0][0]; n != int64(3) {
		t.Fatalf("%v readings answered, want 3", n)
	}
	_, err = q.Write(ctx, "power", []Reading{qh(1, 0, 1, "A", 2, 2000)})
	var qe *QuarantineError
	if !errors.As(err, &qe) || !IsRetryable(err) || !strings.Contains(err.Error(), "quarantined") {
		t.Fatalf("a late correction into the quarantined cold tier: %v, want a retryable refusal naming the quarantine", err)
	}
	if out, err := q.Archive(ctx, "power", dayN(6)); !errors.As(err, &qe) || out.Status != ArchiveQuarantined {
		t.Fatalf("archive of the quarantined table: %+v, %v", out, err)
	}
	if w, _, err := q.Watermark(ctx, "power"); err != nil || !w.Equal(w0) {
		t.Fatalf("W %v (%v), want %v", w, err, w0)
	}
}

func mustQueryOn(t *testing.T, s *Store, name, sql string) *Result {
	t.Helper()
	res, err := s.Query(t.Context(), name, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return res
}

// TestEvolveDeferredByLock opens the store with an added column while a
// reader holds a lock on the table: the table fails alone with a retryable
// error within the lock timeout's bound and nothing changes; once the
// reader is gone, the next write opens the table evolved.
func TestEvolveDeferredByLock(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	s1 := e.open(t, Options{})
	mustWrite(t, s1, []Reading{qh(1, 0, 1, "A", 1, 1000)})
	reader, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(ctx)
	if _, err := reader.Exec(ctx, `SELECT count(*) FROM meterstore.power`); err != nil {
		t.Fatal(err)
	}
	const timeout = 200 * time.Millisecond
	added := withColumns(series.Column{Name: "note"})
	start := time.Now()
	s2 := e.open(t, Options{Tables: []Table{added}, Hot: HotOptions{DDLLockTimeout: timeout}})
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("Open took %v under a held lock", took)
	}
	r := qh(1, 0, 2, "A", 1, 1000)
	r.Extra["note"] = "n"
	_, err = s2.Write(ctx, "power", []Reading{r})
	var open *TableOpenError
	if !errors.As(err, &open) || !IsRetryable(err) {
		t.Fatalf("write while the evolution is deferred: %v, want a retryable *TableOpenError", err)
	}
	if slices.Contains(hotColumns(t, e, "power"), "note") || slices.Contains(coldColumns(t, e, "power"), "note") {
		t.Fatal("a deferred evolution changed a tier")
	}
	if err := reader.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Write(ctx, "power", []Reading{r}); err != nil {
		t.Fatal(err)
	}
	if n := mustQuery(t, s2, `SELECT count(note) FROM readings`).Rows[0][0]; n != int64(1) {
		t.Fatalf("%v notes, want 1", n)
	}
	if !slices.Contains(coldColumns(t, e, "power"), "note") {
		t.Fatal("the cold tier did not follow")
	}
}

// notes returns "from|note" of every reading of power through s, by from,
// with "-" for NULL.
func notes(t *testing.T, s *Store) []string {
	t.Helper()
	res := mustQuery(t, s, `SELECT "from", note FROM readings ORDER BY "from"`)
	var out []string
	for _, r := range res.Rows {
		v := "-"
		if r[1] != nil {
			v = r[1].(string)
		}
		out = append(out, r[0].(time.Time).UTC().Format("0102T1504")+"|"+v)
	}
	return out
}

func withNote(r Reading, v string) Reading {
	r.Extra["note"] = v
	return r
}

// coldFieldID returns the Iceberg field id of column name in the current
// schema of the cold table power, and whether it has one.
func coldFieldID(t *testing.T, e *testEnv, name string) (int, bool) {
	t.Helper()
	ice, err := e.cat.LoadTable(t.Context(), icetable.Identifier{"meterstore", "power"})
	if err != nil {
		t.Fatal(err)
	}
	f, ok := ice.Schema().FindFieldByName(name)
	return f.ID, ok
}

// TestEvolveReaddedColumnKeepsValues archives values of a column, opens
// the store on a declaration without it and then on one with it again: the
// cold table keeps the column's Iceberg field all along, so the archived
// values read back as they were, and the tier of a store that does not
// declare the column shows no trace of it.
func TestEvolveReaddedColumnKeepsValues(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	note := series.Column{Name: "note"}
	s1 := e.open(t, Options{Tables: []Table{withColumns(note)}})
	mustWrite(t, s1, []Reading{withNote(qh(1, 0, 1, "A", 1, 1000), "old")})
	if _, err := s1.Archive(ctx, "power", dayN(3)); err != nil {
		t.Fatal(err)
	}
	id, ok := coldFieldID(t, e, "note")
	if !ok {
		t.Fatal("fixture: the cold table has no column note")
	}
	s2 := e.open(t, Options{})
	if res := mustQuery(t, s2, `SELECT * FROM readings`); slices.Contains(res.Columns, "note") || len(res.Rows) != 1 {
		t.Fatalf("a store that does not declare note: columns %v, %d rows", res.Columns, len(res.Rows))
	}
	s3 := e.open(t, Options{Tables: []Table{withColumns(note)}})
	if got, want := notes(t, s3), []string{"0302T0015|old"}; !slices.Equal(got, want) {
		t.Fatalf("notes after the column was undeclared and declared again: %v, want %v", got, want)
	}
	if again, ok := coldFieldID(t, e, "note"); !ok || again != id {
		t.Fatalf("column note has field id %d (%v), had %d", again, ok, id)
	}
}

// TestEvolveReplicasAlternate runs two replicas of one deployment, one on a
// declaration with a nullable column and one on the older declaration
// without it, opened one after the other as a rolling deployment does.
// Neither loses a value of the column: the older one neither drops it from
// a tier nor archives a window whose rows hold values in it, and what it
// writes and archives reads NULL there.
func TestEvolveReplicasAlternate(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	newer := Options{Tables: []Table{withColumns(series.Column{Name: "note"})}}
	older := Options{}

	a1 := e.open(t, newer)
	mustWrite(t, a1, []Reading{withNote(qh(1, 0, 1, "A", 1, 1000), "a"), withNote(qh(1, 1, 1, "A", 1, 1000), "b")})
	if out, err := a1.Archive(ctx, "power", dayN(4)); err != nil || !out.Watermark.Equal(dayN(2)) {
		t.Fatalf("archive by the newer replica: %+v, %v", out, err)
	}
	mustWrite(t, a1, []Reading{withNote(qh(1, 2, 1, "A", 1, 1000), "c")})

	// The older replica opens while an unarchived reading holds a note.
	b1 := e.open(t, older)
	mustWrite(t, b1, []Reading{qh(1, 3, 1, "A", 1, 1000)})
	if n := mustQuery(t, b1, `SELECT count(*) FROM readings`).Rows[0][0]; n != int64(4) {
		t.Fatalf("the older replica reads %v readings, want 4", n)
	}
	// Day 2's note is not in its declaration: it archives nothing of it,
	// and leaves it to the newer replica.
	out, err := b1.Archive(ctx, "power", dayN(5))
	if err != nil || out.Status != ArchiveDeferred || !out.Healthy() || !strings.Contains(out.Waiting, `"note"`) {
		t.Fatalf("archive by the older replica of a window with notes: %+v, %v; want deferred naming the column", out, err)
	}
	if w, _, err := b1.Watermark(ctx, "power"); err != nil || !w.Equal(dayN(2)) {
		t.Fatalf("W %v (%v) after the refused archival, want %v", w, err, dayN(2))
	}
	if got, want := notes(t, a1), []string{"0302T0015|a", "0303T0015|b", "0304T0015|c", "0305T0015|-"}; !slices.Equal(got, want) {
		t.Fatalf("notes after the older replica opened: %v, want %v", got, want)
	}

	a2 := e.open(t, newer)
	if out, err := a2.Archive(ctx, "power", dayN(5)); err != nil || !out.Watermark.Equal(dayN(3)) {
		t.Fatalf("archive by the newer replica: %+v, %v", out, err)
	}
	b2 := e.open(t, older)
	if out, err := b2.Archive(ctx, "power", dayN(6)); err != nil || !out.Watermark.Equal(dayN(4)) {
		t.Fatalf("archive by the older replica of a window without notes: %+v, %v", out, err)
	}
	mustWrite(t, b2, []Reading{qh(1, 4, 1, "A", 1, 1000)})
	a3 := e.open(t, newer)
	mustWrite(t, a3, []Reading{withNote(qh(1, 5, 1, "A", 1, 1000), "d")})
	want := []string{"0302T0015|a", "0303T0015|b", "0304T0015|c", "0305T0015|-", "0306T0015|-", "0307T0015|d"}
	if got := notes(t, a3); !slices.Equal(got, want) {
		t.Fatalf("notes after the replicas alternated: %v, want %v", got, want)
	}
	if n := mustQuery(t, a3, `SELECT count(*) FROM readings WHERE "from" < `+ts(dayN(4))).Rows[0][0]; n != int64(4) {
		t.Fatalf("%v archived readings, want 4", n)
	}
}

// TestEvolveForeignColumnKept adds a nullable column to the cold table with
// Iceberg tooling (iceberg-go, as PyIceberg or Spark would): the next open
// and archival of the store keep it, with its field id, the files the store
// writes read NULL in it to a foreign reader, and the store's queries do
// not show it.
func TestEvolveForeignColumnKept(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	s1 := e.open(t, Options{})
	mustWrite(t, s1, []Reading{qh(1, 0, 1, "A", 1, 1000), qh(1, 1, 1, "A", 1, 1000)})
	if _, err := s1.Archive(ctx, "power", dayN(3)); err != nil {
		t.Fatal(err)
	}
	ice, err := e.cat.LoadTable(ctx, icetable.Identifier{"meterstore", "power"})
	if err != nil {
		t.Fatal(err)
	}
	tx := ice.NewTransaction()
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"audit_note"}, iceberg.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	id, ok := coldFieldID(t, e, "audit_note")
	if !ok {
		t.Fatal("fixture: the foreign column was not added")
	}

	s2 := e.open(t, Options{})
	if out, err := s2.Archive(ctx, "power", dayN(4)); err != nil || len(out.Windows) != 1 {
		t.Fatalf("archive after the foreign column was added: %+v, %v", out, err)
	}
	if again, ok := coldFieldID(t, e, "audit_note"); !ok || again != id {
		t.Fatalf("the foreign column after an open and an archival: field id %d (%v), had %d", again, ok, id)
	}
	res := mustQuery(t, s2, `SELECT * FROM readings`)
	if slices.Contains(res.Columns, "audit_note") || len(res.Rows) != 2 {
		t.Fatalf("the store's readings: columns %v, %d rows", res.Columns, len(res.Rows))
	}
	ice, err = e.cat.LoadTable(ctx, icetable.Identifier{"meterstore", "power"})
	if err != nil {
		t.Fatal(err)
	}
	arrowTable, err := ice.Scan(icetable.WithSelectedFields("from", "audit_note")).ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer arrowTable.Release()
	col := arrowTable.Column(arrowTable.Schema().FieldIndices("audit_note")[0])
	if arrowTable.NumRows() != 2 || int64(col.NullN()) != 2 {
		t.Fatalf("a foreign reader sees %d rows, %d of them NULL in the foreign column; want 2 and 2", arrowTable.NumRows(), col.NullN())
	}
}
