package hot

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/series"
)

// TestDictionaryForeignKeys: a reading whose series id is of another
// bucket, or whose attr id names no dictionary row, is refused (23503)
// for a plain client, by INSERT and by COPY, with nothing written. A
// series id of another day would otherwise defeat the primary key: the
// same merge key under two ids.
func TestDictionaryForeignKeys(t *testing.T) {
	for _, lay := range dictLayouts {
		t.Run(lay.String(), func(t *testing.T) { testDictionaryForeignKeys(t, lay) })
	}
}

// dictLayouts are the layouts with dictionaries: the step one new tables
// get, and the lean and dictionary layouts of tables made before it.
var dictLayouts = []layout{layoutStep, layoutLean, layoutDictionary}

// leanKind reports whether lay keeps the lean layout's attrs dictionary.
func leanKind(lay layout) bool { return lay == layoutLean || lay == layoutStep }

// dictTier returns a tier whose new tables of integrity statement get
// layout lay, and its pool.
func dictTier(t *testing.T, lay layout) (*Tier, *pgxpool.Pool) {
	h, pool := newTier(t, Options{})
	h.statementLayout = lay
	return h, pool
}

// rawReading returns the columns and values a plain client writes for a
// quarter hour of series and attr ids at from, under version, in layout
// lay.
func rawReading(lay layout, series, attr int32, from time.Time, version int, day string) ([]string, []any) {
	switch lay {
	case layoutStep:
		return []string{"series", "attr", "step", "version", "value"}, []any{series, attr, int32(from.Unix() / 900), versionBiased(uint64(version)), "1"}
	case layoutLean:
		return []string{"series", "attr", "from", "version", "value"}, []any{series, attr, from, versionBiased(uint64(version)), "1"}
	}
	return []string{"series", "attr", "from", "to", "value", "quality", "version", "balancing_day"},
		[]any{series, attr, from, from.Add(15 * time.Minute), "1", "220", version, day}
}

func testDictionaryForeignKeys(t *testing.T, lay layout) {
	h, pool := dictTier(t, lay)
	tab := lastgang("lastgang")
	declare(t, h, tab)
	ctx := context.Background()
	mustWrite(t, h, tab, meterDay(1, 100))
	next := meterDay(1, 100)
	for i := range next {
		next[i].From, next[i].To = next[i].From.Add(24*time.Hour), next[i].To.Add(24*time.Hour)
	}
	mustWrite(t, h, tab, next[:4])
	count := func() (n int) {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM meterstore.lastgang`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	stored := count()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var today, tomorrow, attr, attrTomorrow int32
	if err := pool.QueryRow(ctx, `SELECT (SELECT id FROM meterstore.lastgang_series WHERE bucket = $1),
	(SELECT id FROM meterstore.lastgang_series WHERE bucket = $2), (SELECT min(id) FROM meterstore.lastgang_attrs WHERE bucket = $1),
	(SELECT min(id) FROM meterstore.lastgang_attrs WHERE bucket = $2)`,
		day, day.Add(24*time.Hour)).Scan(&today, &tomorrow, &attr, &attrTomorrow); err != nil {
		t.Fatal(err)
	}
	insert := func(rel string, series, attr int32, version int) error {
		cols, vals := rawReading(lay, series, attr, day.Add(time.Hour), version, "2026-03-02")
		params := make([]string, len(cols))
		for i := range cols {
			params[i] = "$" + strconv.Itoa(i+1)
		}
		_, err := pool.Exec(ctx, `INSERT INTO `+rel+` (`+strings.Join(quoted("", cols), ", ")+`) VALUES (`+strings.Join(params, ", ")+`)`, vals...)
		return err
	}
	copyRows := func(rows ...[]any) error {
		cols, _ := rawReading(lay, 0, 0, day, 0, "")
		_, err := conn.Conn().CopyFrom(ctx, []string{"meterstore", "lastgang"}, cols, pgx.CopyFromRows(rows))
		return err
	}
	row := func(series int32, from time.Time, version int, day string) []any {
		_, vals := rawReading(lay, series, attr, from, version, day)
		return vals
	}
	for _, x := range []struct {
		what       string
		err        error
		constraint string
	}{
		{"a series id of the next day", insert("meterstore.lastgang", tomorrow, attr, 100), "lastgang_series_fkey"},
		{"a series id of the next day, into the partition", insert("meterstore.lastgang_p20260302", tomorrow, attr, 101), "lastgang_series_fkey"},
		{"a series id that does not exist", insert("meterstore.lastgang", 2147483000, attr, 102), "lastgang_series_fkey"},
		{"an attr id that does not exist", insert("meterstore.lastgang", today, 2147483000, 103), "lastgang_attrs_fkey"},
		{"an attr id of the next day", insert("meterstore.lastgang", today, attrTomorrow, 104), "lastgang_attrs_fkey"},
	} {
		if !refusedAs(x.err, "23503") || !containsConstraint(x.err, x.constraint) {
			t.Errorf("%s: %v, want a foreign key violation of %s", x.what, x.err, x.constraint)
		}
	}
	// By COPY, one good row among them: the statement is refused whole.
	slot := day.Add(2 * time.Hour)
	err = copyRows(row(today, slot, 200, "2026-03-02"), row(tomorrow, slot.Add(15*time.Minute), 200, "2026-03-02"))
	if !refusedAs(err, "23503") {
		t.Errorf("COPY with a series id of the next day: %v, want a foreign key violation", err)
	}
	// One series, attr and version in both days: the check groups the
	// rows by ids and version, and must still see the second bucket.
	later := day.Add(24*time.Hour + 2*time.Hour)
	err = copyRows(row(today, slot, 201, "2026-03-02"), row(today, later, 201, "2026-03-03"))
	if !refusedAs(err, "23503") || !containsConstraint(err, "lastgang_series_fkey") {
		t.Errorf("COPY with a series id of today in today and tomorrow: %v, want a foreign key violation of lastgang_series_fkey", err)
	}
	if n := count(); n != stored {
		t.Fatalf("%d rows stored after the refusals, want %d", n, stored)
	}
	if got := scanAll(t, h, tab); len(got) != stored {
		t.Fatalf("scanned %d readings, want %d", len(got), stored)
	}
}

// containsConstraint reports whether err is a PostgreSQL error naming
// constraint c.
func containsConstraint(err error, c string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.ConstraintName == c
}

// TestDictionaryGuard: a plain client can neither UPDATE nor DELETE nor
// TRUNCATE a dictionary: readings refer to its rows by id.
func TestDictionaryGuard(t *testing.T) {
	for _, lay := range dictLayouts {
		t.Run(lay.String(), func(t *testing.T) { testDictionaryGuard(t, lay) })
	}
}

// attrsOfDays is how many attrs rows n writes of one bucket's readings,
// in Berlin days days, make in layout lay: the lean layout's key has the
// balancing day and the write's time.
func attrsOfDays(lay layout, n, days int) int {
	if leanKind(lay) {
		return n * days
	}
	return 1
}

func testDictionaryGuard(t *testing.T, lay layout) {
	h, pool := dictTier(t, lay)
	tab := lastgang("lastgang")
	declare(t, h, tab)
	ctx := context.Background()
	mustWrite(t, h, tab, meterDay(1, 100))
	for _, stmt := range []string{
		`UPDATE meterstore.lastgang_series SET malo_id = '` + malo(2) + `'`,
		`UPDATE meterstore.lastgang_attrs SET version_scope = '9900000000010:2026-03'`,
		`DELETE FROM meterstore.lastgang_series`,
		`DELETE FROM meterstore.lastgang_attrs WHERE true`,
		`TRUNCATE meterstore.lastgang_series CASCADE`,
		`TRUNCATE meterstore.lastgang_attrs`,
	} {
		if _, err := pool.Exec(ctx, stmt); !refusedAs(err, "23001") {
			t.Errorf("%s: %v, want a restrict violation", stmt, err)
		}
	}
	var s, a int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM meterstore.lastgang_series), (SELECT count(*) FROM meterstore.lastgang_attrs)`).Scan(&s, &a); err != nil || s != 1 || a != attrsOfDays(lay, 1, 2) {
		t.Fatalf("%d series and %d attrs left, want 1 and %d (%v)", s, a, attrsOfDays(lay, 1, 2), err)
	}
	if got := scanAll(t, h, tab); len(got) != 96 || got[0].MaLo != malo(1) {
		t.Fatalf("scanned %d readings", len(got))
	}
}

// TestDictionaryDrop: dropping a partition deletes the dictionary rows of
// its bucket and the spans in it, and leaves those of the other days; a
// purge drops the dictionaries.
func TestDictionaryDrop(t *testing.T) {
	for _, lay := range dictLayouts {
		t.Run(lay.String(), func(t *testing.T) { testDictionaryDrop(t, lay) })
	}
}

func testDictionaryDrop(t *testing.T, lay layout) {
	h, pool := dictTier(t, lay)
	tab := lastgang("lastgang")
	declare(t, h, tab)
	ctx := context.Background()
	mustWrite(t, h, tab, append(meterDay(1, 100), meterDay(2, 100)...))
	next := meterDay(1, 100)
	for i := range next {
		next[i].From, next[i].To = next[i].From.Add(24*time.Hour), next[i].To.Add(24*time.Hour)
	}
	mustWrite(t, h, tab, next)
	counts := func() (s, a, o int) {
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM meterstore.lastgang_series), (SELECT count(*) FROM meterstore.lastgang_attrs),
	(SELECT count(*) FROM meterstore.lastgang_operators)`).Scan(&s, &a, &o); err != nil {
			t.Fatal(err)
		}
		return s, a, o
	}
	// Each bucket has the attrs of one write; in the lean layout one per
	// Berlin day the bucket meets.
	wantAttrs := attrsOfDays(lay, 1, 2) + attrsOfDays(lay, 1, 2)
	if s, a, o := counts(); s != 3 || a != wantAttrs || o != 3 {
		t.Fatalf("%d series, %d attrs, %d spans; want 3, %d, 3", s, a, o, wantAttrs)
	}
	if err := h.Detach(ctx, tab, day); err != nil {
		t.Fatal(err)
	}
	// A detached partition is still read, for its archival, through the
	// dictionaries.
	p := Partition{Name: "lastgang_p20260302", From: day, To: day.Add(24 * time.Hour)}
	n := 0
	if err := h.ScanPartition(ctx, tab, p, 50, func(rs []series.Reading) error { n += len(rs); return nil }); err != nil || n != 192 {
		t.Fatalf("scanned %d readings of the detached partition, %v", n, err)
	}
	if err := h.Drop(ctx, tab, day); err != nil {
		t.Fatal(err)
	}
	if s, a, o := counts(); s != 1 || a != attrsOfDays(lay, 1, 2) || o != 1 {
		t.Fatalf("after the drop: %d series, %d attrs, %d spans; want 1, %d, 1", s, a, o, attrsOfDays(lay, 1, 2))
	}
	if got := scanAll(t, h, tab); len(got) != 96 || !got[0].From.Equal(day.Add(24*time.Hour)) {
		t.Fatalf("scanned %d readings after the drop", len(got))
	}
	mustWrite(t, h, tab, next) // Present, through the dictionaries left
	if err := h.Purge(ctx, tab, tab.Name); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relname LIKE 'lastgang%'`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d relations left after the purge (%v)", left, err)
	}
}

// TestRowsLayoutKept: a table of integrity statement in the rows layout
// (one upgraded, or declared before the dictionary layout) keeps that
// layout through declarations, auto and statement, and still writes and
// reads; a fresh Tier reads its layout from hot_tables.
func TestRowsLayoutKept(t *testing.T) {
	h, pool := newTier(t, Options{})
	tab := lastgang("lastgang")
	declareVariant(t, h, tab, variant{"rows", series.IntegrityStatement, true, nil})
	ctx := context.Background()
	// As a statement table created by the version before: format 2,
	// statement, no layout.
	d := definitionOf(tab, series.IntegrityStatement)
	d.Layout = ""
	old, _ := json.Marshal(d)
	if _, err := pool.Exec(ctx, `UPDATE meterstore.hot_tables SET definition = $1`, old); err != nil {
		t.Fatal(err)
	}
	for _, i := range []series.Integrity{series.IntegrityAuto, series.IntegrityStatement} {
		fresh, err := New(pool, Options{})
		if err != nil {
			t.Fatal(err)
		}
		again := lastgang("lastgang")
		again.Integrity = i
		if err := fresh.Ensure(ctx, again); err != nil {
			t.Fatalf("declared %v: %v", i, err)
		}
		if l, err := fresh.layoutOf(ctx, pool, again); err != nil || l != layoutRows {
			t.Fatalf("declared %v: layout %q, %v", i, l, err)
		}
		res := mustWrite(t, fresh, again, meterDay(int(i)+1, 100))
		if res.Inserted != 96 {
			t.Fatalf("declared %v: %+v", i, res)
		}
		if res := mustWrite(t, fresh, again, meterDay(int(i)+1, 100)); res.Present != 96 {
			t.Fatalf("declared %v, a redelivery: %+v", i, res)
		}
	}
	var stored []byte
	var dict bool
	if err := pool.QueryRow(ctx, `SELECT definition, to_regclass('meterstore.lastgang_series') IS NOT NULL FROM meterstore.hot_tables`).Scan(&stored, &dict); err != nil {
		t.Fatal(err)
	}
	var have definition
	if err := json.Unmarshal(stored, &have); err != nil || have.Layout != "" || dict {
		t.Fatalf("stored layout %q, dictionary %v (%v)", have.Layout, dict, err)
	}
	if got := scanAll(t, h, tab); len(got) != 192 {
		t.Fatalf("scanned %d readings, want 192", len(got))
	}
}

// TestDictionarySize: the same readings take fewer bytes in the lean
// layout than in the dictionary layout, and fewer there than in the rows
// layout, counting everything Size counts (heap, indexes, spans,
// dictionaries).
func TestDictionarySize(t *testing.T) {
	ctx := context.Background()
	var bytes [4]int64
	for i, v := range statementLayouts {
		h, _ := newTier(t, Options{})
		tab := lastgang("lastgang")
		declareVariant(t, h, tab, v)
		var rows []series.Reading
		for m := range 50 {
			rows = append(rows, meterDay(m+1, 100)...)
		}
		mustWrite(t, h, tab, rows)
		n, b, err := h.Size(ctx, tab)
		if err != nil || n != int64(len(rows)) {
			t.Fatalf("%s: %d rows, %v", v.name, n, err)
		}
		bytes[i] = b
		t.Logf("%s: %d bytes, %d per reading", v.name, b, b/n)
	}
	if bytes[0] >= bytes[1] || bytes[1] >= bytes[2] || bytes[2] >= bytes[3] {
		t.Fatalf("step layout %d bytes, lean layout %d, dictionary layout %d, rows layout %d", bytes[0], bytes[1], bytes[2], bytes[3])
	}
}

// TestDictionaryConcurrentKeys: writers that bring the same new series and
// attributes at once each get the one id of a key: the loser of an insert
// waits for the winner and reads its id, and every reading is stored once.
func TestDictionaryConcurrentKeys(t *testing.T) {
	for _, lay := range dictLayouts {
		t.Run(lay.String(), func(t *testing.T) { testDictionaryConcurrentKeys(t, lay) })
	}
}

func testDictionaryConcurrentKeys(t *testing.T, lay layout) {
	h, pool := dictTier(t, lay)
	tab := lastgang("lastgang")
	declare(t, h, tab)
	ctx := context.Background()
	const writers = 6
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			// Every writer brings meters 1 to 8, each its own versions,
			// in its own order.
			var rows []series.Reading
			for m := range 8 {
				rows = append(rows, meterDay((m+w)%8+1, uint64(100+w))[:4]...)
			}
			_, err := h.Write(ctx, tab, rows)
			errs <- err
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var s, a, n int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM meterstore.lastgang_series), (SELECT count(*) FROM meterstore.lastgang_attrs),
	(SELECT count(*) FROM meterstore.lastgang)`).Scan(&s, &a, &n); err != nil {
		t.Fatal(err)
	}
	// In the lean layout each write has attrs of its own: their key has
	// the write's time.
	if want := attrsOfDays(lay, writers, 1); s != 8 || a != want || n != writers*8*4 {
		t.Fatalf("%d series, %d attrs, %d readings; want 8, %d, %d", s, a, n, want, writers*8*4)
	}
	if got := scanAll(t, h, tab); len(got) != n {
		t.Fatalf("scanned %d readings, want %d", len(got), n)
	}
}

// TestPurgeLeavesOtherTables: purging a table of the rows layout leaves a
// declared table named like its dictionaries would be, and Size does not
// count it.
func TestPurgeLeavesOtherTables(t *testing.T) {
	h, pool := newTier(t, Options{})
	ctx := context.Background()
	tab := lastgang("power")
	tab.Integrity = series.IntegrityExclusion
	declare(t, h, tab)
	other := lastgang("power_series")
	declare(t, h, other)
	mustWrite(t, h, other, meterDay(1, 1))
	// An exclusion table owns no ownership relation either.
	owners := lastgang("power_operators")
	declare(t, h, owners)
	mustWrite(t, h, owners, meterDay(1, 1))
	_, small, err := h.Size(ctx, tab)
	if err != nil {
		t.Fatal(err)
	}
	_, big, err := h.Size(ctx, other)
	if err != nil || small >= big {
		t.Fatalf("empty table %d bytes, the other %d (%v)", small, big, err)
	}
	if err := h.Purge(ctx, tab, tab.Name); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM meterstore.power_series`).Scan(&n); err != nil || n != 96 {
		t.Fatalf("the other table: %d rows, %v", n, err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM meterstore.power_operators`).Scan(&n); err != nil || n != 96 {
		t.Fatalf("the table named like an ownership relation: %d rows, %v", n, err)
	}
}

// TestDictionaryIDCollision turns a dictionary's id sequence back onto ids
// in use, as its cycling through the int4 range would: a new key's insert
// collides on the id, is retried from the savepoint with the next id and
// lands; when more ids in a row are taken than Write tries, it is refused
// Unavailable with nothing written.
func TestDictionaryIDCollision(t *testing.T) {
	h, pool := newTier(t, Options{})
	tab := lastgang("power")
	declare(t, h, tab)
	ctx := context.Background()
	restart := func() {
		t.Helper()
		if _, err := pool.Exec(ctx, `ALTER TABLE meterstore.power_series ALTER COLUMN id RESTART WITH -2147483648`); err != nil {
			t.Fatal(err)
		}
	}
	counts := func() (series, readings int) {
		t.Helper()
		if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM meterstore.power_series), (SELECT count(*) FROM meterstore.power)`).Scan(&series, &readings); err != nil {
			t.Fatal(err)
		}
		return series, readings
	}
	mustWrite(t, h, tab, meterDay(1, 1))
	restart()
	mustWrite(t, h, tab, meterDay(2, 1)) // id -2147483648 taken: one retry
	if s, n := counts(); s != 2 || n != 192 {
		t.Fatalf("after one collision: %d series, %d readings; want 2, 192", s, n)
	}
	got := scanAll(t, h, tab)
	if len(got) != 192 || got[96].MaLo != meterDay(2, 1)[0].MaLo {
		t.Fatalf("scanned %d readings, the 97th of %s", len(got), got[96].MaLo)
	}

	for m := 3; m <= maxAttempts; m++ {
		mustWrite(t, h, tab, meterDay(m, 1))
	}
	restart() // the first maxAttempts ids are taken
	_, err := h.Write(ctx, tab, meterDay(maxAttempts+1, 1))
	wantError(t, err, series.Unavailable)
	if s, n := counts(); s != maxAttempts || n != maxAttempts*96 {
		t.Fatalf("after the refused write: %d series, %d readings; want %d, %d", s, n, maxAttempts, maxAttempts*96)
	}
	mustWrite(t, h, tab, meterDay(maxAttempts+1, 1)) // the sequence has moved past them
}

// TestDictionaryKeysSpendNoIDs: the insert that goes with the look-up in
// one round trip is offered every key of the batch, yet spends no id on a
// key stored already, and a series it did not insert is still looked at
// for other versions: a correction of a stored series supersedes, a new
// series beside it is inserted.
func TestDictionaryKeysSpendNoIDs(t *testing.T) {
	for _, lay := range dictLayouts {
		t.Run(lay.String(), func(t *testing.T) {
			h, pool := dictTier(t, lay)
			tab := lastgang("lastgang")
			declare(t, h, tab)
			ctx := context.Background()
			next := func() int64 {
				t.Helper()
				var v int64
				if err := pool.QueryRow(ctx, `SELECT pg_sequence_last_value(pg_get_serial_sequence('meterstore.lastgang_series', 'id'))`).Scan(&v); err != nil {
					t.Fatal(err)
				}
				return v
			}
			mustWrite(t, h, tab, append(meterDay(1, 1), meterDay(2, 1)...))
			before := next()
			res := mustWrite(t, h, tab, append(meterDay(1, 2), meterDay(3, 1)...))
			if res.Superseded != 96 || res.Inserted != 96 {
				t.Fatalf("%d superseded, %d inserted; want 96, 96", res.Superseded, res.Inserted)
			}
			if got := next(); got != before+1 {
				t.Fatalf("series ids %d to %d: want one id spent, on the new series", before, got)
			}
		})
	}
}
