package hot

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meterstore/meterstore/series"
)

// readTable declares a table of quarter hours with an identity column and
// two attributes, in the dictionary layout (IntegrityStatement) or the
// rows layout (IntegrityWrite), with partitions for day and the two days
// after.
func readTable(t *testing.T, h *Tier, name string, i series.Integrity) *series.Table {
	t.Helper()
	tab := lastgang(name)
	tab.Integrity = i
	tab.Columns = []series.Column{{Name: "channel", Identity: true, Values: []string{"A", "B"}}, {Name: "source"}, {Name: "seq", Type: series.BigInt}}
	if err := h.Ensure(t.Context(), tab); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CreatePartitions(t.Context(), tab, day, day.AddDate(0, 0, 2)); err != nil {
		t.Fatal(err)
	}
	return tab
}

// readWhole returns a Read of every row of tab in a new snapshot of up
// to conns connections, which the test's end closes.
func readWhole(t *testing.T, h *Tier, tab *series.Table, conns int) *Read {
	t.Helper()
	snap, err := h.OpenSnapshot(t.Context(), conns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { snap.Close() })
	r, err := snap.Read(t.Context(), tab, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// readRows returns meters' quarter hours on channels A and B for d days
// from day, with attributes, version v, and corrections: every seventh
// reading again under version v+1.
func readRows(meters, days int, v uint64) []series.Reading {
	var out []series.Reading
	for d := range days {
		for i := range meters {
			for _, ch := range []string{"A", "B"} {
				for n, r := range meterDay(i, v) {
					r.From, r.To = r.From.AddDate(0, 0, d), r.To.AddDate(0, 0, d)
					r.Extra = map[string]string{"channel": ch}
					if n%3 == 0 {
						r.Extra["source"] = fmt.Sprintf("src%d", n%2)
						r.Extra["seq"] = fmt.Sprint(n * 1000)
					}
					if i == 1 {
						r.MeLo = "DE000000000000000000000000000000" + fmt.Sprint(d)
						r.Subject = "subject-1"
					}
					out = append(out, r)
					if n%7 == 0 {
						c := r
						c.Version, c.Value = v+1, r.Value+1
						out = append(out, c)
					}
				}
			}
		}
	}
	return out
}

// natural returns a reading as a line of its natural columns, as a Read
// hands them over.
func natural(r series.Reading) string {
	opt := func(s string) string {
		if s == "" {
			return "NULL"
		}
		return s
	}
	extra := func(name string) string {
		v, ok := r.Extra[name]
		if !ok {
			return "NULL"
		}
		return v
	}
	day := time.Date(r.BalancingDay.Year, r.BalancingDay.Month, r.BalancingDay.Day, 0, 0, 0, 0, time.UTC)
	return strings.Join([]string{r.MaLo, opt(r.MeLo), r.OBIS, r.Commodity.String(), fmt.Sprint(r.From.UnixMicro()), fmt.Sprint(r.To.UnixMicro()),
		fmt.Sprint(int64(r.Value)), r.Unit.String(), r.Quality.String(), r.Resolution.String(), fmt.Sprint(r.Version), r.VersionScope,
		fmt.Sprint(r.RecordedAt.UnixMicro()), fmt.Sprint(day.Unix() / 86400), opt(r.Subject), extra("channel"), extra("source"), extra("seq")}, "|")
}

// readAll reads every relation of r through cursors, unit by unit on
// goroutines of their own, joins the rows to their dictionaries and
// returns the natural lines, sorted.
func readAll(t *testing.T, r *Read, winners bool) []string {
	t.Helper()
	ctx := t.Context()
	sh := r.Shape()
	rels := []Relation{sh.Rows}
	for _, d := range sh.Dicts {
		rels = append(rels, d.Relation)
	}
	got := make([][][]string, len(rels)) // by relation: rows of values as text
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	for rel, relation := range rels {
		cols := make([]int, len(relation.Columns))
		for i := range cols {
			cols[i] = i
		}
		for u := range r.Units(rel) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := r.Scan(ctx, rel, u, cols, winners && rel == 0)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				var rows [][]string
				for c.Next(ctx) {
					row := make([]string, len(cols))
					for i, col := range cols {
						switch k := relation.Columns[col].Kind; {
						case c.Null(i):
							row[i] = "NULL"
						case k == KindText:
							row[i] = string(c.Bytes(i))
						case k == KindUint64:
							row[i] = fmt.Sprint(c.Uint64(i))
						default:
							row[i] = fmt.Sprint(c.Int64(i))
						}
					}
					rows = append(rows, row)
				}
				mu.Lock()
				defer mu.Unlock()
				if err := c.Err(); err != nil {
					errs = append(errs, err)
				}
				got[rel] = append(got[rel], rows...)
			}()
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	value := func(rel int, row []string, name string) (string, bool) {
		for i, c := range rels[rel].Columns {
			if c.Name == name {
				return row[i], true
			}
		}
		return "", false
	}
	dicts := make([]map[string][]string, len(sh.Dicts))
	for i, d := range sh.Dicts {
		dicts[i] = map[string][]string{}
		for _, row := range got[i+1] {
			id, _ := value(i+1, row, d.ID)
			dicts[i][id] = row
		}
	}
	names := []string{"malo_id", "melo_id", "obis_code", "sparte", "from", "to", "value", "unit", "quality", "resolution", "version",
		"version_scope", "recorded_at", "balancing_day", "subject_id", "channel", "source", "seq"}
	var out []string
	for _, row := range got[0] {
		line := make([]string, len(names))
		for i, n := range names {
			v, ok := value(0, row, n)
			for j, d := range sh.Dicts {
				if ok {
					break
				}
				ref, _ := value(0, row, d.Ref)
				entry, found := dicts[j][ref]
				if !found {
					t.Fatalf("row %v: no %s %s in its dictionary", row, d.Ref, ref)
				}
				v, ok = value(j+1, entry, n)
			}
			if !ok {
				t.Fatalf("no column %s in the read's shape", n)
			}
			line[i] = v
		}
		out = append(out, strings.Join(line, "|"))
	}
	slices.Sort(out)
	return out
}

// TestReadMatchesScan reads both layouts through a Read, every version and
// the winners, for ranges and filters, and compares with Scan.
func TestReadMatchesScan(t *testing.T) {
	h, _ := newTier(t, Options{})
	ctx := t.Context()
	for _, c := range []struct {
		i   series.Integrity
		lay layout
	}{{series.IntegrityStatement, layoutStep}, {series.IntegrityStatement, layoutLean}, {series.IntegrityStatement, layoutDictionary}, {series.IntegrityWrite, layoutRows}} {
		i := c.i
		h.statementLayout = c.lay
		tab := readTable(t, h, "read_"+i.String()+c.lay.String(), i)
		rows := readRows(3, 3, 10)
		var first, second []series.Reading
		for _, r := range rows {
			if r.Version == 10 {
				first = append(first, r)
			} else {
				second = append(second, r)
			}
		}
		mustWrite(t, h, tab, first)
		mustWrite(t, h, tab, second)
		if lay, err := h.layoutOf(ctx, h.pool, tab); err != nil || lay != c.lay {
			t.Fatalf("%s: layout %q, %v", i, lay, err)
		}
		for _, q := range []series.Range{
			{},
			{From: day.AddDate(0, 0, 1)},
			{From: day.Add(90 * time.Minute), To: day.AddDate(0, 0, 1).Add(3 * time.Hour)},
			{MaLo: []string{malo(1), malo(2)}},
			{From: day.AddDate(0, 0, 2), MaLo: []string{malo(0)}, OBIS: []string{"1-1:1.29.0"}},
			{MaLo: []string{"nobody's"}},
			{From: day.AddDate(0, 0, 5)},
		} {
			var scanned []series.Reading
			if err := h.Scan(ctx, tab, q, func(r series.Reading) error { scanned = append(scanned, r); return nil }); err != nil {
				t.Fatal(err)
			}
			var every, winners []string
			best := map[string]series.Reading{}
			for _, r := range scanned {
				every = append(every, natural(r))
				k := r.MaLo + r.OBIS + r.From.String() + r.Extra["channel"]
				if b, ok := best[k]; !ok || r.Version > b.Version {
					best[k] = r
				}
			}
			for _, r := range best {
				winners = append(winners, natural(r))
			}
			slices.Sort(every)
			slices.Sort(winners)
			snap, err := h.OpenSnapshot(ctx, 3)
			if err != nil {
				t.Fatal(err)
			}
			r, err := snap.Read(ctx, tab, q)
			if err != nil {
				t.Fatal(err)
			}
			// Batches of the default size, and small ones: a key's
			// versions then span batches.
			for _, batch := range []int{batchRows, 1, 2, 7} {
				r.batch = batch
				if got := readAll(t, r, false); !slices.Equal(got, every) {
					t.Errorf("%s %v, batches of %d: every version: %d rows, want %d\n got %.300v\nwant %.300v", i, q, batch, len(got), len(every), got, every)
				}
				if got := readAll(t, r, true); !slices.Equal(got, winners) {
					t.Errorf("%s %v, batches of %d: winners: %d rows, want %d\n got %.300v\nwant %.300v", i, q, batch, len(got), len(winners), got, winners)
				}
			}
			if n, _, _ := r.Moved(); n < int64(len(every)+len(winners)) {
				t.Errorf("%s %v: moved %d rows, read %d", i, q, n, len(every)+len(winners))
			}
			if err := snap.Close(); err != nil {
				t.Fatal(err)
			}
			if q.From.IsZero() && q.MaLo == nil && len(every) != len(rows) {
				t.Fatalf("%s: %d rows scanned, %d written", i, len(every), len(rows))
			}
		}
	}
}

// TestReadColumns reads a projection, in another order than the table's,
// and no column at all.
func TestReadColumns(t *testing.T) {
	h, _ := newTier(t, Options{})
	ctx := t.Context()
	tab := readTable(t, h, "cols", series.IntegrityStatement)
	mustWrite(t, h, tab, readRows(2, 1, 3))
	r := readWhole(t, h, tab, 2)
	idx := map[string]int{}
	for i, c := range r.Shape().Rows.Columns {
		idx[c.Name] = i
	}
	c, err := r.Scan(ctx, 0, 0, []int{idx["value"], idx["from"]}, true)
	if err != nil {
		t.Fatal(err)
	}
	// The winners: every reading's newest version.
	var want, sum int64
	best := map[string]series.Decimal{}
	for _, r := range readRows(2, 1, 3) {
		best[r.MaLo+r.From.String()+r.Extra["channel"]] = r.Value // versions ascend
	}
	for _, v := range best {
		want += int64(v)
	}
	n := 0
	for c.Next(ctx) {
		if from := time.UnixMicro(c.Int64(1)).UTC(); from.Before(day) || !from.Before(day.AddDate(0, 0, 1)) {
			t.Fatalf("from %v", from)
		}
		sum += c.Int64(0)
		n++
	}
	if c.Err() != nil || n != len(best) || sum != want {
		t.Fatalf("%d winners summing %d, want %d summing %d: %v", n, sum, len(best), want, c.Err())
	}
	c, err = r.Scan(ctx, 0, 0, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	for n = 0; c.Next(ctx); n++ {
	}
	if c.Err() != nil || n != len(readRows(2, 1, 3)) {
		t.Fatalf("no columns: %d rows, %v", n, c.Err())
	}
}

// TestSnapshotTables reads two tables in one snapshot: rows written to
// either after it was taken are in neither read.
func TestSnapshotTables(t *testing.T) {
	h, _ := newTier(t, Options{})
	ctx := t.Context()
	a := readTable(t, h, "snap_a", series.IntegrityStatement)
	b := readTable(t, h, "snap_b", series.IntegrityWrite)
	first := readRows(2, 3, 1)
	mustWrite(t, h, a, first)
	mustWrite(t, h, b, first)
	want := map[string][]string{}
	for _, tab := range []*series.Table{a, b} {
		for _, r := range scanAll(t, h, tab) {
			want[tab.Name] = append(want[tab.Name], natural(r))
		}
		slices.Sort(want[tab.Name])
	}
	snap, err := h.OpenSnapshot(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	later := readRows(3, 3, 5) // another meter, and corrections
	mustWrite(t, h, a, later)
	mustWrite(t, h, b, later)
	for _, tab := range []*series.Table{a, b} {
		r, err := snap.Read(ctx, tab, series.Range{})
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, r, false); len(want[tab.Name]) != len(first) || !slices.Equal(got, want[tab.Name]) {
			t.Errorf("%s: %d rows, want the %d written before the snapshot", tab.Name, len(got), len(want[tab.Name]))
		}
	}
}

// TestSnapshotsHalfThePool lets at most half the pool's connections hold
// snapshots: one more waits until one closes.
func TestSnapshotsHalfThePool(t *testing.T) {
	h, pool := newTier(t, Options{})
	var open []*Snapshot
	for range pool.Config().MaxConns / 2 {
		s, err := h.OpenSnapshot(t.Context(), 1)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, s)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if s, err := h.OpenSnapshot(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a snapshot beyond half the pool: %v, %v", s, err)
	}
	open[0].Close()
	s, err := h.OpenSnapshot(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, s := range open[1:] {
		s.Close()
	}
}

// TestCursorAbandoned leaves cursors that fetch ahead in the middle of
// their rows, as a query that stops early does: closing the snapshot ends
// their fetching (no goroutine is left), and a cursor asked for more
// afterwards fails instead of using a connection the snapshot gave back.
func TestCursorAbandoned(t *testing.T) {
	h, _ := newTier(t, Options{})
	ctx := t.Context()
	tab := readTable(t, h, "abandoned", series.IntegrityStatement)
	mustWrite(t, h, tab, readRows(3, 3, 10))
	before := runtime.NumGoroutine()
	snap, err := h.OpenSnapshot(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	r, err := snap.Read(ctx, tab, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	r.batch = 2
	var curs []*Cursor
	for u := range r.Units(0) {
		c, err := r.Scan(ctx, 0, u, []int{0, 1}, u%2 == 0)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if !c.Next(ctx) {
				t.Fatalf("unit %d ended early: %v", u, c.Err())
			}
		}
		curs = append(curs, c)
	}
	if len(curs) < 2 {
		t.Fatalf("%d units; want several", len(curs))
	}
	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}
	for i, c := range curs {
		for c.Next(ctx) {
		}
		if c.Err() == nil {
			t.Errorf("cursor %d read to its end after the snapshot closed", i)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the snapshot closed, %d before it opened", n, before)
	}
}

// TestReadFloorAsOfSnapshot: a read's floor is the table's as its
// snapshot saw it, listed with its partitions: a partition detached
// before the snapshot lifts it, one detached after does not, and the read
// still reads the latter, as the snapshot saw it, by its name.
func TestReadFloorAsOfSnapshot(t *testing.T) {
	h, _ := newTier(t, Options{})
	ctx := t.Context()
	tab := readTable(t, h, "snap_floor", series.IntegrityStatement)
	mustWrite(t, h, tab, readRows(2, 3, 1))
	second := series.Range{From: day.AddDate(0, 0, 1), To: day.AddDate(0, 0, 2)}
	want := 0
	for _, r := range scanAll(t, h, tab) {
		if !r.From.Before(second.From) && r.From.Before(second.To) {
			want++
		}
	}
	if err := h.Detach(ctx, tab, day); err != nil {
		t.Fatal(err)
	}
	snap, err := h.OpenSnapshot(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if err := h.Detach(ctx, tab, second.From); err != nil {
		t.Fatal(err)
	}
	r, err := snap.Read(ctx, tab, second)
	if err != nil {
		t.Fatal(err)
	}
	detached, attached := r.Floor()
	if !detached.Equal(second.From) || !attached.Equal(second.From) {
		t.Errorf("floor as of the snapshot: detached %v, attached %v; want both %v", detached, attached, second.From)
	}
	nowDetached, _, err := h.Floor(ctx, tab)
	if err != nil || !nowDetached.Equal(second.To) {
		t.Fatalf("floor now: %v, %v; want %v", nowDetached, err, second.To)
	}
	if got := readAll(t, r, false); len(got) != want || want == 0 {
		t.Errorf("the partition detached after the snapshot: %d rows, want %d", len(got), want)
	}
}

// TestOpenSnapshotRead: a snapshot taken with its first read in one round
// trip reads what a snapshot and a read taken apart read: the rows
// written before it alone, the same partitions and floor, and another
// table's read in the same snapshot.
func TestOpenSnapshotRead(t *testing.T) {
	h, _ := newTier(t, Options{})
	ctx := t.Context()
	a := readTable(t, h, "one_a", series.IntegrityStatement)
	b := readTable(t, h, "one_b", series.IntegrityWrite)
	first := readRows(2, 3, 1)
	mustWrite(t, h, a, first)
	mustWrite(t, h, b, first)
	if err := h.Detach(ctx, a, day); err != nil {
		t.Fatal(err)
	}
	apart, err := h.OpenSnapshot(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer apart.Close()
	want, err := apart.Read(ctx, a, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	wantRows := readAll(t, want, false)
	snap, r, err := h.OpenSnapshotRead(ctx, 2, a, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	var later []series.Reading // in a's attached partitions
	for _, x := range readRows(3, 3, 5) {
		if !x.From.Before(day.AddDate(0, 0, 1)) {
			later = append(later, x)
		}
	}
	mustWrite(t, h, a, later)
	mustWrite(t, h, b, later)
	wd, wa := want.Floor()
	gd, ga := r.Floor()
	if !slices.Equal(r.Partitions(), want.Partitions()) || !gd.Equal(wd) || !ga.Equal(wa) || !gd.Equal(day.AddDate(0, 0, 1)) {
		t.Errorf("partitions %v, floor %v %v; want %v, %v %v", r.Partitions(), gd, ga, want.Partitions(), wd, wa)
	}
	if got := readAll(t, r, false); len(got) == 0 || !slices.Equal(got, wantRows) {
		t.Errorf("%d rows, want the %d of the snapshot taken apart", len(got), len(wantRows))
	}
	other, err := snap.Read(ctx, b, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	var wantB []string
	for _, x := range scanAll(t, h, b) {
		wantB = append(wantB, natural(x))
	}
	if got := readAll(t, other, false); len(got) >= len(wantB) || len(got) == 0 {
		t.Errorf("another table in the snapshot: %d rows, want fewer than the %d written since", len(got), len(wantB))
	}
}

// TestCursorFetchesAhead: while its consumer holds the first batch, a
// cursor fetches aheadBatches more and stops there, so that PostgreSQL
// works ahead of a slow consumer and memory stays bounded; the consumer
// then reads every row.
func TestCursorFetchesAhead(t *testing.T) {
	h, _ := newTier(t, Options{})
	ctx := t.Context()
	tab := readTable(t, h, "ahead", series.IntegrityStatement)
	mustWrite(t, h, tab, readRows(2, 1, 1))
	r := readWhole(t, h, tab, 1)
	r.batch = 2
	c, err := r.Scan(ctx, 0, 0, []int{0, 1}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.Next(ctx) {
		t.Fatalf("no row: %v", c.Err())
	}
	want := int64((aheadBatches + 1) * r.batch)
	deadline := time.Now().Add(10 * time.Second)
	for r.rows.Load() < want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	// Long enough for a fetcher that does not stop to fetch more.
	time.Sleep(100 * time.Millisecond)
	if got := r.rows.Load(); got != want {
		t.Fatalf("%d rows fetched while the consumer held the first batch, want %d (%d batches ahead)", got, want, aheadBatches)
	}
	n := int64(1)
	for c.Next(ctx) {
		n++
	}
	if c.Err() != nil || n <= want {
		t.Fatalf("read %d rows (%v), want more than the %d fetched ahead", n, c.Err(), want)
	}
}

// TestAheadDepth: a cursor of narrow rows fetches aheadBatches ahead, one
// of wide rows fewer, so that what it holds ahead stays near aheadBytes,
// and one of very wide rows still one.
func TestAheadDepth(t *testing.T) {
	for _, c := range []struct{ first, want int }{
		{0, aheadBatches},
		{200 << 10, aheadBatches}, // 8,192 rows of 25 bytes
		{aheadBytes / 2, 2},
		{aheadBytes, 1},
		{10 * aheadBytes, 1},
	} {
		if got := aheadDepth(c.first); got != c.want {
			t.Errorf("aheadDepth(%d) = %d, want %d", c.first, got, c.want)
		}
		if got := aheadDepth(c.first); c.first > 0 && got > 1 && got*c.first > aheadBytes {
			t.Errorf("aheadDepth(%d) = %d holds %d bytes ahead, more than %d", c.first, got, got*c.first, aheadBytes)
		}
	}
}

// TestCursorBatchesPooledOnce ends cursors every way a read ends them,
// at their end, abandoned when their snapshot closes in the middle of
// their rows, and by their statement's cancellation, and finds each of
// their batches in the tier's pool once: a batch pooled twice would be
// filled by two cursors at once.
func TestCursorBatchesPooledOnce(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // a collection empties the pool
	h, _ := newTier(t, Options{})
	ctx := t.Context()
	tab := readTable(t, h, "pooled", series.IntegrityStatement)
	mustWrite(t, h, tab, readRows(2, 2, 1))
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	ends := map[string]struct {
		before func(r *Read) // after a few rows of every cursor
		ctx    context.Context
	}{
		"at its end":      {func(*Read) {}, ctx},
		"snapshot closed": {func(r *Read) { r.s.Close() }, ctx},
		"cancelled":       {func(*Read) {}, cancelled},
	}
	for name, end := range ends {
		r := readWhole(t, h, tab, 2)
		r.batch = 2
		var curs []*Cursor
		for u := range r.Units(0) {
			c, err := r.Scan(ctx, 0, u, []int{0, 1}, u%2 == 0)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for range 5 {
				c.Next(ctx)
			}
			curs = append(curs, c)
		}
		end.before(r)
		for _, c := range curs {
			for c.Next(end.ctx) {
			}
			c.Close()
		}
	}
	seen := map[*fetched]bool{}
	for range 10000 {
		b, ok := h.batches.Get().(*fetched)
		if !ok {
			break
		}
		if seen[b] {
			t.Fatalf("a batch is in the pool twice (after %d distinct ones)", len(seen))
		}
		seen[b] = true
	}
	if len(seen) == 0 {
		t.Fatal("no batch was pooled")
	}
}
