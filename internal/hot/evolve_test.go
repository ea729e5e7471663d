package hot

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/series"
)

// columnsOf returns the columns of relation rel in the test schema, in
// table order.
func columnsOf(t *testing.T, pool *pgxpool.Pool, rel string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
SELECT attname FROM pg_attribute
WHERE attrelid = ('meterstore.' || quote_ident($1))::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, rel)
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

func storedDefinition(t *testing.T, pool *pgxpool.Pool, name string) string {
	t.Helper()
	var def string
	if err := pool.QueryRow(context.Background(), `SELECT definition::text FROM meterstore.hot_tables WHERE name = $1`, name).Scan(&def); err != nil {
		t.Fatal(err)
	}
	return def
}

// TestEvolveAddUndeclare adds a nullable column to a table with rows and
// undeclares another, under each integrity: attached and detached
// partitions and partitions made later all follow, the added column gets
// its CHECK, writes and scans use the new columns, and the undeclared one
// stays with its values, which no detach under the declaration without it
// takes away.
func TestEvolveAddUndeclare(t *testing.T) {
	for _, integrity := range []series.Integrity{series.IntegrityStatement, series.IntegrityExclusion, series.IntegrityWrite} {
		t.Run(integrity.String(), func(t *testing.T) {
			h, pool := newTier(t, Options{})
			ctx := context.Background()
			tab := lastgang("lastgang")
			tab.Integrity = integrity
			tab.Columns = []series.Column{{Name: "channel", Identity: true}, {Name: "note"}}
			declare(t, h, tab)
			old := meterDay(1, 1)
			for i := range old {
				old[i].Extra = map[string]string{"channel": "A", "note": "n"}
			}
			mustWrite(t, h, tab, old)
			// The day before, detached as an archival leaves it.
			if _, err := h.CreatePartitions(ctx, tab, day.AddDate(0, 0, -1), day.AddDate(0, 0, -1)); err != nil {
				t.Fatal(err)
			}
			if err := h.Detach(ctx, tab, day.AddDate(0, 0, -1)); err != nil {
				t.Fatal(err)
			}

			added := *tab
			added.Columns = []series.Column{{Name: "channel", Identity: true}, {Name: "note"}, {Name: "tariff", Values: []string{"HT", "NT"}}, {Name: "seq", Type: series.BigInt}}
			for range 2 { // the second finds nothing to do
				if err := h.Ensure(ctx, &added); err != nil {
					t.Fatal(err)
				}
			}
			for _, rel := range []string{"lastgang", "lastgang_p20260302", "lastgang_p20260301"} {
				if cols := columnsOf(t, pool, rel); !slices.Contains(cols, "tariff") || !slices.Contains(cols, "seq") {
					t.Fatalf("%s has columns %v, want tariff and seq", rel, cols)
				}
			}
			// The CHECK of creation, on every relation, validated after
			// the evolution (added NOT VALID, so as not to scan under
			// ACCESS EXCLUSIVE).
			var checks, valid int
			var def string
			if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE convalidated), min(pg_get_constraintdef(oid))
FROM pg_constraint WHERE conname = 'tariff_check'`).Scan(&checks, &valid, &def); err != nil {
				t.Fatal(err)
			}
			if checks < 4 || valid != checks || !strings.Contains(def, "'HT'") || !strings.Contains(def, "'NT'") { // parent, two attached partitions, the detached one
				t.Fatalf("%d tariff_check constraints, %d valid (%s), want one valid per relation", checks, valid, def)
			}
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_constraint WHERE conname = 'seq_check'`).Scan(&checks); err != nil || checks != 0 {
				t.Fatalf("%d seq_check constraints, %v: a bigint column gets none at creation", checks, err)
			}
			later := day.AddDate(0, 0, 2)
			if _, err := h.CreatePartitions(ctx, &added, later, later); err != nil {
				t.Fatal(err)
			}
			if cols := columnsOf(t, pool, "lastgang_p20260304"); !slices.Contains(cols, "tariff") {
				t.Fatalf("a partition made after the evolution has columns %v", cols)
			}
			fresh := meterDay(2, 1)
			for i := range fresh {
				fresh[i].Extra = map[string]string{"channel": "A", "tariff": "HT", "seq": "7"}
			}
			mustWrite(t, h, &added, fresh)
			got := scanAll(t, h, &added)
			if len(got) != 192 {
				t.Fatalf("scanned %d rows, want 192", len(got))
			}
			for _, r := range got {
				want := map[string]string{"channel": "A", "note": "n"}
				if r.MaLo == fresh[0].MaLo {
					want = map[string]string{"channel": "A", "tariff": "HT", "seq": "7"}
				}
				for k, v := range want {
					if r.Extra[k] != v {
						t.Fatalf("row %s %v: extra %v, want %v", r.MaLo, r.From, r.Extra, want)
					}
				}
				if len(r.Extra) != len(want) {
					t.Fatalf("row %s %v: extra %v, want %v", r.MaLo, r.From, r.Extra, want)
				}
			}
			if _, err := pool.Exec(ctx, `INSERT INTO meterstore.lastgang_p20260301 SELECT * FROM meterstore.lastgang WHERE false`); err != nil {
				t.Fatalf("the detached partition's columns differ from the parent's: %v", err)
			}

			undeclared := added
			undeclared.Columns = []series.Column{{Name: "channel", Identity: true}, {Name: "tariff", Values: []string{"HT", "NT"}}, {Name: "seq", Type: series.BigInt}}
			// The first day's readings hold notes and are not archived: the
			// column stays, and so do they.
			if err := h.Ensure(ctx, &undeclared); err != nil {
				t.Fatal(err)
			}
			for _, rel := range []string{"lastgang", "lastgang_p20260302", "lastgang_p20260301", "lastgang_p20260304"} {
				if cols := columnsOf(t, pool, rel); !slices.Contains(cols, "note") {
					t.Fatalf("%s lost the undeclared column note: %v", rel, cols)
				}
			}
			if def := storedDefinition(t, pool, "lastgang"); !strings.Contains(def, `"undeclared": true`) {
				t.Fatalf("the stored definition does not mark note undeclared: %s", def)
			}
			third := meterDay(3, 1)
			for i := range third {
				third[i].Extra = map[string]string{"channel": "A"}
			}
			mustWrite(t, h, &undeclared, third)
			got = scanAll(t, h, &undeclared)
			if len(got) != 288 {
				t.Fatalf("scanned %d rows with note undeclared, want 288", len(got))
			}
			for _, r := range got {
				if _, ok := r.Extra["note"]; ok {
					t.Fatalf("row %s %v: the undeclared note is scanned: %v", r.MaLo, r.From, r.Extra)
				}
			}
			var notes int
			if err := pool.QueryRow(ctx, `SELECT count(note) FROM meterstore.lastgang`).Scan(&notes); err != nil || notes != 96 {
				t.Fatalf("%d notes after the column was undeclared (%v), want 96", notes, err)
			}
			var n int
			err := h.ScanPartition(ctx, &undeclared, Partition{Name: "lastgang_p20260301", From: day.AddDate(0, 0, -1), To: day}, 100, func(rs []series.Reading) error {
				n += len(rs)
				return nil
			})
			if err != nil {
				t.Fatalf("scan of the detached partition with the evolved columns: %v", err)
			}
			// Archiving the notes' partition without note declared would
			// lose them: the detach is refused and changes nothing; with
			// note declared it goes ahead. The detached partition holds no
			// note and passes.
			if err := h.Detach(ctx, &undeclared, day); !errors.Is(err, ErrUndeclaredValues) || !series.IsRetryable(err) || !strings.Contains(err.Error(), `"note"`) {
				t.Fatalf("detach of a partition with values in an undeclared column: %v; want a retryable ErrUndeclaredValues naming it", err)
			}
			parts, err := h.Partitions(ctx, &undeclared)
			if err != nil {
				t.Fatal(err)
			}
			if i := slices.IndexFunc(parts, func(p Partition) bool { return p.Name == "lastgang_p20260302" }); i < 0 || !parts[i].Attached {
				t.Fatalf("the refused detach detached: %+v", parts)
			}
			if err := h.Detach(ctx, &undeclared, day.AddDate(0, 0, -1)); err != nil {
				t.Fatalf("detach of a detached partition without notes: %v", err)
			}
			// Declared again, the column is taken back as it is.
			if err := h.Ensure(ctx, &added); err != nil {
				t.Fatal(err)
			}
			if def := storedDefinition(t, pool, "lastgang"); strings.Contains(def, `"undeclared"`) {
				t.Fatalf("note declared again is still marked undeclared: %s", def)
			}
			if err := h.Detach(ctx, &added, day); err != nil {
				t.Fatalf("detach with note declared: %v", err)
			}
		})
	}
}

// TestEvolveQuarantineChangesNothing: a change series.Evolve refuses is a
// *series.QuarantineError, and the relation and its record stay as they
// were.
func TestEvolveQuarantineChangesNothing(t *testing.T) {
	h, pool := newTier(t, Options{})
	ctx := context.Background()
	tab := lastgang("lastgang")
	tab.Columns = []series.Column{{Name: "channel", Identity: true}, {Name: "note"}}
	declare(t, h, tab)
	def, cols := storedDefinition(t, pool, "lastgang"), columnsOf(t, pool, "lastgang")
	for name, columns := range map[string][]series.Column{
		"type change":        {{Name: "channel", Identity: true}, {Name: "note", Type: series.BigInt}},
		"new identity":       {{Name: "channel", Identity: true}, {Name: "note"}, {Name: "tariff", Identity: true}},
		"identity dropped":   {{Name: "note"}},
		"nullable with type": {{Name: "channel", Identity: true}, {Name: "note", Type: series.BigInt}, {Name: "extra"}},
	} {
		t.Run(name, func(t *testing.T) {
			changed := *tab
			changed.Columns = columns
			var q *series.QuarantineError
			err := h.Ensure(ctx, &changed)
			if !errors.As(err, &q) || len(q.Reasons) == 0 || series.IsRetryable(err) {
				t.Fatalf("Ensure: %v, want a quarantine that is not retryable", err)
			}
			if got := storedDefinition(t, pool, "lastgang"); got != def {
				t.Fatalf("definition changed: %s, was %s", got, def)
			}
			if got := columnsOf(t, pool, "lastgang"); !slices.Equal(got, cols) {
				t.Fatalf("columns changed: %v, were %v", got, cols)
			}
		})
	}
}

// TestEvolveLockTimeout holds a lock on the table that the evolution's
// ALTER conflicts with: Ensure gives up within its bound with a retryable
// ErrDeferred and changes nothing, and succeeds once the lock is gone.
func TestEvolveLockTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	h, pool := newTier(t, Options{DDLLockTimeout: timeout})
	ctx := context.Background()
	tab := lastgang("lastgang")
	tab.Columns = []series.Column{{Name: "note"}}
	declare(t, h, tab)
	mustWrite(t, h, tab, meterDay(1, 1))
	def := storedDefinition(t, pool, "lastgang")

	reader, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(ctx)
	var n int
	if err := reader.QueryRow(ctx, `SELECT count(*) FROM meterstore.lastgang`).Scan(&n); err != nil || n != 96 {
		t.Fatalf("reader: %d rows, %v", n, err)
	}
	added := *tab
	added.Columns = []series.Column{{Name: "note"}, {Name: "tariff"}}
	start := time.Now()
	err = h.Ensure(ctx, &added)
	took := time.Since(start)
	if !errors.Is(err, ErrDeferred) || !series.IsRetryable(err) {
		t.Fatalf("Ensure under a held lock: %v, want a retryable ErrDeferred", err)
	}
	if bound := evolveAttempts*timeout + 5*time.Second; took > bound {
		t.Fatalf("Ensure took %v, bound %v", took, bound)
	}
	if took < evolveAttempts*timeout {
		t.Fatalf("Ensure gave up after %v, before %d waits of %v", took, evolveAttempts, timeout)
	}
	if got := storedDefinition(t, pool, "lastgang"); got != def {
		t.Fatalf("definition changed: %s", got)
	}
	if cols := columnsOf(t, pool, "lastgang"); slices.Contains(cols, "tariff") {
		t.Fatalf("column added though deferred: %v", cols)
	}
	if err := reader.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Ensure(ctx, &added); err != nil {
		t.Fatal(err)
	}
	if cols := columnsOf(t, pool, "lastgang"); !slices.Contains(cols, "tariff") {
		t.Fatalf("columns after the lock is gone: %v", cols)
	}
}

// TestEvolveCheckNotValidFirst runs an evolution's transaction without the
// validation after it: the added column's CHECK is NOT VALID, yet refuses
// a new row that breaks it; validatePending then validates it.
func TestEvolveCheckNotValidFirst(t *testing.T) {
	h, pool := newTier(t, Options{})
	ctx := context.Background()
	tab := lastgang("lastgang")
	tab.Integrity = series.IntegrityWrite
	declare(t, h, tab)
	mustWrite(t, h, tab, meterDay(1, 1))
	added := *tab
	added.Columns = []series.Column{{Name: "tariff", Values: []string{"HT", "NT"}}}
	ev := series.Evolution{Add: added.Columns}
	want := definitionOf(&added, series.IntegrityWrite)
	if err := h.ddl(ctx, "ensure", tab.Name, func(tx pgx.Tx) error { return h.evolve(ctx, tx, &added, ev, want) }); err != nil {
		t.Fatal(err)
	}
	validated := func() bool {
		var v bool
		if err := pool.QueryRow(ctx, `SELECT bool_and(convalidated) FROM pg_constraint WHERE conname = 'tariff_check'`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if validated() {
		t.Fatal("the CHECK was validated inside the evolution, under ACCESS EXCLUSIVE")
	}
	_, err := pool.Exec(ctx, `INSERT INTO meterstore.lastgang (malo_id, obis_code, sparte, "from", "to", value, unit, quality, resolution, version, version_scope, balancing_day, tariff)
	SELECT malo_id, obis_code, sparte, "from", "to", value, unit, quality, resolution, version + 1, version_scope, balancing_day, 'XX' FROM meterstore.lastgang LIMIT 1`)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23514" || pgErr.ConstraintName != "tariff_check" {
		t.Fatalf("a tariff outside the CHECK: %v, want check_violation of tariff_check", err)
	}
	h.validatePending(ctx, &added)
	if !validated() {
		t.Fatal("validatePending left the CHECK NOT VALID")
	}
}
