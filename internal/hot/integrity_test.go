package hot

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/series"
)

// sqlClient writes to a hot table past Write, as psql would: plain INSERT
// and COPY, in the dictionary layout after the dictionary rows (see
// plainInsert and plainCopy).
type sqlClient struct {
	pool *pgxpool.Pool
	rel  string // the relation written: the parent or a partition
}

// table returns the schema-qualified table c writes to.
func (c sqlClient) table() string {
	if i := strings.LastIndex(c.rel, "_p"); i > 0 && len(c.rel)-i == 10 {
		return c.rel[:i]
	}
	return c.rel
}

// insert inserts one quarter hour of meter i at slot n.
func (c sqlClient) insert(ctx context.Context, q execQuerier, malo, unit string, n, version int, operator string, value float64) error {
	from := day.Add(time.Duration(n) * 15 * time.Minute)
	return plainInsert(ctx, q, c.table(), c.rel, qhRow(malo, unit, from, version, operator+":2026-03", value))
}

// A cell is a quarter hour to copy: its slot, version and operator.
type cell struct {
	slot, version int
	operator      string
}

// copyCells copies quarter hours of market location malo in one COPY.
func (c sqlClient) copyCells(ctx context.Context, malo string, cells ...cell) error {
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var rows []plainRow
	for _, x := range cells {
		from := day.Add(time.Duration(x.slot) * 15 * time.Minute)
		rows = append(rows, qhRow(malo, "kWh", from, x.version, x.operator+":2026-03", "1.5"))
	}
	return plainCopy(ctx, conn.Conn(), c.table(), c.rel, rows)
}

// A variant is a way a table of the tests gets its integrity: declared
// with it, or for the rows layout of integrity statement (tables from
// before the dictionary layout) declared with exclusion and upgraded.
type variant struct {
	name      string
	integrity series.Integrity
	rows      bool   // statement in the rows layout, by upgrade
	old       layout // statement in this layout of older code, not the new tables' one
}

// statementLayouts are the four layouts a table of integrity statement
// can have, the new tables' first.
var statementLayouts = []variant{
	{"step", series.IntegrityStatement, false, nil},
	{"lean", series.IntegrityStatement, false, layoutLean},
	{"dictionary", series.IntegrityStatement, false, layoutDictionary},
	{"rows", series.IntegrityStatement, true, nil},
}

// declareVariant declares tab, whose Integrity is left as the test set it
// unless v says otherwise, as v says, with the partitions of declare.
func declareVariant(t testing.TB, h *Tier, tab *series.Table, v variant) {
	t.Helper()
	if v.old != nil {
		h.statementLayout = v.old
	}
	if !v.rows {
		if v.integrity != series.IntegrityAuto {
			tab.Integrity = v.integrity
		}
		declare(t, h, tab)
		want := newLayout(tab.Integrity)
		if v.old != nil {
			want = v.old
		}
		if l, err := h.layoutOf(context.Background(), h.pool, tab); tab.Integrity != series.IntegrityAuto && (err != nil || l != want) {
			t.Fatalf("table: layout %q, %v; want %q", l, err, want)
		}
		return
	}
	old := *tab
	old.Integrity = series.IntegrityExclusion
	declare(t, h, &old)
	tab.Integrity = series.IntegrityStatement
	declare(t, h, tab)
	if l, err := h.layoutOf(context.Background(), h.pool, tab); err != nil || l != layoutRows {
		t.Fatalf("upgraded table: layout %q, %v; want rows", l, err)
	}
}

// refusedAs reports whether err is a refusal with SQLSTATE code.
func refusedAs(err error, code string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == code
}

// TestStatementIntegrity writes each violation of the integrity rules of
// the package documentation (# Integrity) with plain SQL, past Write, into a table of IntegrityStatement and
// sees PostgreSQL refuse it with nothing written; into a table of
// IntegrityWrite the rules between rows are not enforced for such a
// client, which the same statements show.
func TestStatementIntegrity(t *testing.T) {
	for _, v := range append(statementLayouts, variant{"write", series.IntegrityWrite, false, nil}) {
		t.Run(v.name, func(t *testing.T) {
			h, pool := newTier(t, Options{})
			tab := lastgang("lastgang")
			declareVariant(t, h, tab, v)
			ctx := context.Background()
			enforced := v.integrity == series.IntegrityStatement
			mustWrite(t, h, tab, meterDay(1, 100)) // operator 9900000000003
			count := func() (n int) {
				if err := pool.QueryRow(ctx, `SELECT count(*) FROM meterstore.lastgang`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			stored := count()
			// expect checks a statement of a rule between rows: refused
			// with code, nothing written, if enforced; written otherwise.
			expect := func(what string, err error, code string, rowsIfTaken int) {
				t.Helper()
				switch {
				case enforced && !refusedAs(err, code):
					t.Errorf("%s: %v, want SQLSTATE %s", what, err, code)
				case enforced && count() != stored:
					t.Errorf("%s: refused, but %d rows stored, want %d", what, count(), stored)
				case !enforced && err != nil:
					t.Errorf("%s: %v; a table of integrity write takes it from a plain client", what, err)
				case !enforced:
					stored += rowsIfTaken
				}
			}
			parent := sqlClient{pool: pool, rel: "meterstore.lastgang"}
			part := sqlClient{pool: pool, rel: "meterstore.lastgang_p20260302"}
			m1, m2 := malo(1), malo(2)

			// One network operator per reading.
			expect("second operator, INSERT", parent.insert(ctx, pool, m1, "kWh", 5, 101, "9900000000010", 2), "23P01", 1)
			expect("second operator, INSERT into the partition", part.insert(ctx, pool, m1, "kWh", 6, 102, "9900000000010", 2), "23P01", 1)
			a, b := "9900000000003", "9900000000010"
			expect("second operator, COPY", parent.copyCells(ctx, m1, cell{10, 103, a}, cell{11, 103, b}, cell{12, 103, a}), "23P01", 3)
			expect("two operators within one COPY", parent.copyCells(ctx, m2, cell{0, 1, a}, cell{1, 1, a}, cell{2, 1, a}, cell{2, 2, b}), "23P01", 4)
			err := func() error {
				conn, err := pool.Acquire(ctx)
				if err != nil {
					return err
				}
				defer conn.Release()
				tx, err := conn.Begin(ctx)
				if err != nil {
					return err
				}
				defer tx.Rollback(ctx)
				c := sqlClient{pool: pool, rel: "meterstore.lastgang"}
				if err := c.insert(ctx, tx, malo(3), "kWh", 0, 1, "9900000000003", 1); err != nil {
					return err
				}
				if err := c.insert(ctx, tx, malo(3), "kWh", 0, 2, "9900000000010", 1); err != nil {
					return err
				}
				return tx.Commit(ctx)
			}()
			expect("two operators within one transaction", err, "23P01", 2)

			// Readings are not updated: a correction is a new version.
			update := []string{`UPDATE meterstore.lastgang SET value = value + 1 WHERE malo_id = $1 AND "from" = $2`,
				`UPDATE meterstore.lastgang_p20260302 SET version_scope = '9900000000010:2026-03' WHERE malo_id = $1 AND "from" >= $2`}
			if dict, err := isDictionary(ctx, pool, "meterstore.lastgang"); err != nil {
				t.Fatal(err)
			} else if dict {
				// The operator is the attr's; UPDATE of the
				// dictionaries is TestDictionaryGuard's.
				const series = `series = (SELECT id FROM meterstore.lastgang_series WHERE malo_id = $1)`
				col, _, err := leanStart(ctx, pool, "meterstore.lastgang", day)
				if err != nil {
					t.Fatal(err)
				}
				update = []string{`UPDATE meterstore.lastgang SET value = value + 1 WHERE ` + series + ` AND ` + quote(col) + ` = $2`,
					`UPDATE meterstore.lastgang_p20260302 SET attr = attr + 1 WHERE ` + series + ` AND ` + quote(col) + ` >= $2`}
			}
			_, start, err := leanStart(ctx, pool, "meterstore.lastgang", day)
			if err != nil {
				t.Fatal(err)
			}
			_, err = pool.Exec(ctx, update[0], m1, start)
			expect("UPDATE of a value", err, "23001", 0)
			_, err = pool.Exec(ctx, update[1], m1, start)
			expect("UPDATE of the operator, in the partition", err, "23001", 0)
		})
	}
}

// TestStatementIntegrityRules: the rules on single rows and keys hold for
// a plain client in a table of IntegrityStatement, with nothing written.
func TestStatementIntegrityRules(t *testing.T) {
	for _, v := range statementLayouts {
		t.Run(v.name, func(t *testing.T) {
			v.integrity = series.IntegrityAuto // a new table: statement
			testStatementIntegrityRules(t, v)
		})
	}
}

func testStatementIntegrityRules(t *testing.T, v variant) {
	h, pool := newTier(t, Options{})
	tab := lastgang("lastgang")
	declareVariant(t, h, tab, v)
	ctx := context.Background()
	mustWrite(t, h, tab, meterDay(1, 100))
	c := sqlClient{pool: pool, rel: "meterstore.lastgang"}
	bad := malo(2)[:10] + string('0'+(malo(2)[10]-'0'+1)%10)
	for _, x := range []struct {
		what string
		err  error
		code string
	}{
		{"a value restated under an existing key and version", c.insert(ctx, pool, malo(1), "kWh", 3, 100, "9900000000003", 7), "23505"},
		{"an id whose check digit fails", c.insert(ctx, pool, bad, "kWh", 3, 1, "9900000000003", 1), "23514"},
		{"an id whose check digit fails, by COPY", c.copyCells(ctx, bad, cell{0, 1, "9900000000003"}, cell{1, 1, "9900000000003"}), "23514"},
		{"an unknown unit", c.insert(ctx, pool, malo(2), "XYZ", 3, 1, "9900000000003", 1), "23514"},
		{"a malformed version scope", c.insert(ctx, pool, malo(2), "kWh", 3, 1, "9900000000003 ", 1), "23514"},
	} {
		if !refusedAs(x.err, x.code) {
			t.Errorf("%s: %v, want SQLSTATE %s", x.what, x.err, x.code)
		}
	}
	// Overlap within a version: off the grid, or of another resolution.
	for _, iv := range []struct{ from, to time.Time }{
		{day.Add(5 * time.Minute), day.Add(20 * time.Minute)},
		{day, day.Add(time.Hour)},
	} {
		r := qhRow(malo(1), "kWh", iv.from, 100, "9900000000003:2026-03", 1)
		r.to = iv.to
		err := plainInsert(ctx, pool, "meterstore.lastgang", "meterstore.lastgang", r)
		if errors.Is(err, errOffGrid) {
			continue // the step layout stores no start off the grid
		}
		if !refusedAs(err, "23514") {
			t.Errorf("an interval %v-%v overlapping stored ones: %v, want a check violation", iv.from, iv.to, err)
		}
	}
	var n, owners int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM meterstore.lastgang), (SELECT count(*) FROM meterstore.lastgang_operators)`).Scan(&n, &owners); err != nil || n != 96 || owners != 1 {
		t.Fatalf("%d rows and %d spans stored, want 96 and 1 (%v)", n, owners, err)
	}
}

// TestOwnershipSpans: the spans recorded are exact. A delivery with gaps
// claims only the readings it has, so another operator may deliver the
// readings in between; a whole day is one span; a span already recorded
// is not recorded again; dropping a partition forgets its spans.
func TestOwnershipSpans(t *testing.T) {
	for _, v := range statementLayouts {
		t.Run(v.name, func(t *testing.T) { testOwnershipSpans(t, v) })
	}
}

func testOwnershipSpans(t *testing.T, v variant) {
	h, pool := newTier(t, Options{})
	tab := lastgang("lastgang")
	declareVariant(t, h, tab, v)
	ctx := context.Background()
	// The dictionary layouts keep a row per series, with a multirange of
	// spans per operator; the rows layout a row per span.
	count := `SELECT count(*) FROM meterstore.lastgang_operators o, unnest(o.spans) m, unnest(m) r`
	if v.rows {
		count = `SELECT count(*) FROM meterstore.lastgang_operators`
	}
	spans := func() (n int) {
		if err := pool.QueryRow(ctx, count).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	c := sqlClient{pool: pool, rel: "meterstore.lastgang"}
	a, b := "9900000000003", "9900000000010"
	if err := c.copyCells(ctx, malo(1), cell{0, 1, a}, cell{2, 1, a}, cell{4, 1, a}); err != nil {
		t.Fatal(err)
	}
	if n := spans(); n != 3 {
		t.Fatalf("%d spans for three readings with gaps, want 3", n)
	}
	if err := c.copyCells(ctx, malo(1), cell{1, 1, b}, cell{3, 1, b}); err != nil {
		t.Fatalf("the readings between another operator's: %v", err)
	}
	if err := c.insert(ctx, pool, malo(1), "kWh", 2, 2, b, 1); !refusedAs(err, "23P01") {
		t.Fatalf("a reading of another operator: %v", err)
	}
	day1 := meterDay(2, 100)
	mustWrite(t, h, tab, day1)
	n := spans()
	fix := day1[10:20]
	for k := range fix {
		fix[k].Version, fix[k].Value = 101, 7
	}
	mustWrite(t, h, tab, fix)
	if spans() != n {
		t.Fatalf("a correction within a recorded span recorded %d more", spans()-n)
	}
	if err := h.Detach(ctx, tab, day); err != nil {
		t.Fatal(err)
	}
	if err := h.Drop(ctx, tab, day); err != nil {
		t.Fatal(err)
	}
	if n := spans(); n != 0 {
		t.Fatalf("%d spans left after the partition was dropped", n)
	}
}

// TestIntegrityOfOlderTables: a table recorded in format 1 (before
// integrity was recorded) keeps its integrity when declared again without
// one, and an explicit other integrity than statement (which upgrades it,
// TestIntegrityUpgrade) is refused with a clear message.
func TestIntegrityOfOlderTables(t *testing.T) {
	for _, excl := range []bool{true, false} {
		h, pool := newTier(t, Options{})
		ctx := context.Background()
		tab := lastgang("lastgang")
		want := series.IntegrityExclusion
		if !excl {
			want = series.IntegrityWrite
		}
		tab.Integrity = want
		declare(t, h, tab)
		d := definitionOf(tab, want)
		d.Format, d.Integrity, d.Exclusion = 1, "", excl
		old, _ := json.Marshal(d)
		if _, err := pool.Exec(ctx, `UPDATE meterstore.hot_tables SET definition = $1`, old); err != nil {
			t.Fatal(err)
		}
		fresh, err := New(pool, Options{})
		if err != nil {
			t.Fatal(err)
		}
		auto := lastgang("lastgang")
		if err := fresh.Ensure(ctx, auto); err != nil {
			t.Fatalf("exclusion %v: %v", excl, err)
		}
		if got, err := fresh.integrityOf(ctx, pool, lastgang("lastgang")); err != nil || got != want {
			t.Fatalf("exclusion %v: integrity %v, %v; want %v", excl, got, err, want)
		}
		other := lastgang("lastgang")
		other.Integrity = map[bool]series.Integrity{true: series.IntegrityWrite, false: series.IntegrityExclusion}[excl]
		err = fresh.Ensure(ctx, other)
		wantError(t, err, series.InvalidConfig)
		if !strings.Contains(err.Error(), "integrity "+want.String()+", now "+other.Integrity.String()) {
			t.Fatalf("exclusion %v: %v", excl, err)
		}
		mustWrite(t, fresh, auto, meterDay(1, 1))
	}
}

// TestStatementIntegrityConcurrent: two plain clients deliver one reading
// from two network operators in overlapping transactions, the second at
// REPEATABLE READ with its snapshot taken before the first commits. The
// ownership relation's constraint sees the uncommitted span, so the second
// waits for the first and is refused, whatever its snapshot.
//
// In the dictionary layout the client finds the dictionary rows committed
// (a second transaction inserting the same uncommitted key would wait for
// the first at the dictionary's unique index instead, and be refused a
// serialization failure, which shows nothing of the spans).
func TestStatementIntegrityConcurrent(t *testing.T) {
	for _, v := range statementLayouts {
		t.Run(v.name, func(t *testing.T) { testStatementIntegrityConcurrent(t, v) })
	}
}

func testStatementIntegrityConcurrent(t *testing.T, v variant) {
	h, pool := newTier(t, Options{})
	tab := lastgang("lastgang")
	declareVariant(t, h, tab, v)
	ctx := context.Background()
	c := sqlClient{pool: pool, rel: "meterstore.lastgang"}
	dict, err := isDictionary(ctx, pool, "meterstore.lastgang")
	if err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		m := malo(10 + round)
		for _, op := range []string{"9900000000003", "9900000000010"} {
			from := day.Add(time.Duration(round) * 15 * time.Minute)
			if dict {
				if err := plainDict(ctx, pool, "meterstore.lastgang", qhRow(m, "kWh", from, 1, op+":2026-03", 1)); err != nil {
					t.Fatal(err)
				}
			}
		}
		t1, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
		if err != nil {
			t.Fatal(err)
		}
		t2, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := t2.Exec(ctx, `SELECT count(*) FROM meterstore.lastgang`); err != nil {
			t.Fatal(err)
		}
		if err := c.insert(ctx, t1, m, "kWh", round, 1, "9900000000003", 1); err != nil {
			t.Fatal(err)
		}
		second := make(chan error, 1)
		go func() { second <- c.insert(ctx, t2, m, "kWh", round, 2, "9900000000010", 1) }()
		waitFor(t, pool, `SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO meterstore.lastgang%'`)
		if err := t1.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		err = <-second
		t2.Rollback(ctx)
		if !refusedAs(err, "23P01") && !refusedAs(err, "40001") {
			t.Fatalf("round %d: the second operator's insert: %v", round, err)
		}
	}
}

// TestIntegrityUpgrade: a table of integrity exclusion or write declared
// again with integrity statement is upgraded in place: its stored spans
// are recorded, its partitions lose their GiST constraints and gain the
// triggers, and from then on a plain client's second operator is refused.
// A table of integrity write holding two operators' readings for one
// interval, which its plain clients could write, is refused the upgrade
// and left as it was.
func TestIntegrityUpgrade(t *testing.T) {
	for _, from := range []series.Integrity{series.IntegrityExclusion, series.IntegrityWrite} {
		t.Run(from.String(), func(t *testing.T) {
			h, pool := newTier(t, Options{})
			ctx := context.Background()
			tab := lastgang("lastgang")
			tab.Integrity = from
			declare(t, h, tab)
			mustWrite(t, h, tab, meterDay(1, 100))
			mustWrite(t, h, tab, meterDay(2, 100)[10:20])
			c := sqlClient{pool: pool, rel: "meterstore.lastgang"}
			gappy := []cell{{0, 1, "9900000000003"}, {2, 1, "9900000000003"}}
			if err := c.copyCells(ctx, malo(3), gappy...); err != nil {
				t.Fatal(err)
			}

			up := lastgang("lastgang")
			up.Integrity = series.IntegrityStatement
			if err := h.Ensure(ctx, up); err != nil {
				t.Fatal(err)
			}
			var spans, excl, triggers int
			if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM meterstore.lastgang_operators),
	(SELECT count(*) FROM pg_constraint WHERE contype = 'x' AND conrelid::regclass::text LIKE 'meterstore.lastgang_p%'),
	(SELECT count(*) FROM pg_trigger WHERE tgrelid = 'meterstore.lastgang_p20260302'::regclass)`).Scan(&spans, &excl, &triggers); err != nil {
				t.Fatal(err)
			}
			// Meter 1's day and meter 2's stretch a span each; meter 3's
			// readings with a gap one each.
			if spans != 4 || excl != 0 || triggers != 2 {
				t.Fatalf("after the upgrade: %d spans, %d exclusion constraints, %d triggers on a partition; want 4, 0, 2", spans, excl, triggers)
			}
			if got, err := h.Integrity(ctx, lastgang("lastgang")); err != nil || got != series.IntegrityStatement {
				t.Fatalf("integrity %v, %v", got, err)
			}
			if err := c.insert(ctx, pool, malo(1), "kWh", 4, 101, "9900000000010", 1); !refusedAs(err, "23P01") {
				t.Fatalf("a second operator after the upgrade: %v", err)
			}
			if err := c.copyCells(ctx, malo(3), cell{1, 1, "9900000000010"}); err != nil {
				t.Fatalf("another operator between the readings of a gappy delivery: %v", err)
			}
			mustWrite(t, h, lastgang("lastgang"), meterDay(4, 100))
		})
	}

	h, pool := newTier(t, Options{})
	ctx := context.Background()
	tab := lastgang("lastgang")
	tab.Integrity = series.IntegrityWrite
	declare(t, h, tab)
	c := sqlClient{pool: pool, rel: "meterstore.lastgang"}
	if err := c.copyCells(ctx, malo(1), cell{5, 1, "9900000000003"}, cell{5, 2, "9900000000010"}); err != nil {
		t.Fatal(err) // integrity write: nothing stops a plain client
	}
	up := lastgang("lastgang")
	up.Integrity = series.IntegrityStatement
	err := h.Ensure(ctx, up)
	wantError(t, err, series.InvariantViolation)
	if !strings.Contains(err.Error(), "two network operators") {
		t.Fatal(err)
	}
	var owners bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('meterstore.lastgang_operators') IS NOT NULL`).Scan(&owners); err != nil || owners {
		t.Fatalf("a refused upgrade left the ownership relation (%v)", err)
	}
	if got, err := h.Integrity(ctx, lastgang("lastgang")); err != nil || got != series.IntegrityWrite {
		t.Fatalf("integrity after a refused upgrade: %v, %v", got, err)
	}
	var triggers int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_trigger WHERE tgrelid::regclass::text LIKE 'meterstore.lastgang%' AND NOT tgisinternal`).Scan(&triggers); err != nil || triggers != 0 {
		t.Fatalf("a refused upgrade left %d triggers (%v)", triggers, err)
	}
}

// TestStatementCheckRefreshed: a table whose statement check function is
// not the one this version writes (declared by an older version) gets it
// replaced when declared again, and the triggers call the new one. The
// older function here checks nothing, so a bad id goes in until then.
func TestStatementCheckRefreshed(t *testing.T) {
	for _, v := range statementLayouts {
		t.Run(v.name, func(t *testing.T) { testStatementCheckRefreshed(t, v) })
	}
}

func testStatementCheckRefreshed(t *testing.T, v variant) {
	h, pool := newTier(t, Options{})
	tab := lastgang("lastgang")
	declareVariant(t, h, tab, v)
	ctx := context.Background()
	lay, err := h.layoutOf(ctx, pool, tab)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE OR REPLACE FUNCTION meterstore.lastgang_rows_check() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`); err != nil {
		t.Fatal(err)
	}
	c := sqlClient{pool: pool, rel: "meterstore.lastgang"}
	bad := malo(2)[:10] + string('0'+(malo(2)[10]-'0'+1)%10)
	insert := func(slot int) error { return c.insert(ctx, pool, bad, "kWh", slot, 1, "9900000000003", 1) }
	code := "23514"
	if v.rows {
		// Upgraded, the table keeps its per-row CHECKs of the ids; the
		// function records the spans, so a second operator shows it.
		insert = func(slot int) error {
			if err := c.insert(ctx, pool, malo(2), "kWh", slot, 1, "9900000000003", 1); err != nil {
				return err
			}
			return c.insert(ctx, pool, malo(2), "kWh", slot, 2, "9900000000010", 1)
		}
		code = "23P01"
	}
	if lay == layoutDictionary || leanKind(lay) {
		// The dictionary's CHECK refuses a bad id whatever the function;
		// what the function checks is that the ids name dictionary rows.
		if err := plainDict(ctx, pool, "meterstore.lastgang", qhRow(malo(2), "kWh", day, 1, "9900000000003:2026-03", 1)); err != nil {
			t.Fatal(err)
		}
		insert = func(slot int) error {
			from := day.Add(time.Duration(slot) * 15 * time.Minute)
			if leanKind(lay) {
				col, start, err := leanStart(ctx, pool, "meterstore.lastgang", from)
				if err != nil {
					return err
				}
				_, err = pool.Exec(ctx, `INSERT INTO meterstore.lastgang (series, attr, `+quote(col)+`, version, value)
SELECT id, 2147483000, $1, 1, 1 FROM meterstore.lastgang_series`, start)
				return err
			}
			_, err := pool.Exec(ctx, `INSERT INTO meterstore.lastgang (series, attr, "from", "to", value, quality, version, balancing_day)
SELECT id, 2147483000, $1, $2, 1, '220', 1, '2026-03-02' FROM meterstore.lastgang_series`, from, from.Add(15*time.Minute))
			return err
		}
		code = "23503"
	}
	if err := insert(3); err != nil {
		t.Fatalf("the older check refused a bad row: %v; the test would show nothing", err)
	}
	declare(t, h, tab)
	if err := insert(4); !refusedAs(err, code) {
		t.Fatalf("bad row after the declaration: %v, want SQLSTATE %s", err, code)
	}
	var body string
	if err := pool.QueryRow(ctx, `SELECT prosrc FROM pg_proc WHERE oid = 'meterstore.lastgang_rows_check()'::regprocedure`).Scan(&body); err != nil {
		t.Fatal(err)
	}
	if body != lay.checkBody(h, tab) {
		t.Fatal("the check function's body is not the one this version writes")
	}
	declare(t, h, tab) // the same body: nothing to replace, nothing fails
}
