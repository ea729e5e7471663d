package query

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// A memSource is a Source over real data without PostgreSQL or a catalog:
// hot rows in memory, cold rows in Parquet files written by DuckDB. Hooks
// let a test act between the engine's reads, as a concurrent archiver.
type memSource struct {
	t   testing.TB
	tab *series.Table
	dir string

	mu      sync.Mutex
	w       time.Time
	hasW    bool
	hot     []series.Reading
	files   []coldFile
	floor   time.Time
	floorOK bool
	wmErr   error // Watermark fails with it
	coldErr error // Cold fails with it
	calls   []call
	// after runs after each call, with the call's name.
	after func(op string)
	// dict names the columns the hot reads keep in a dictionary; read is
	// the last hot read.
	dict []string
	read *readingRows
	// columns: Cold names each file's columns, as a warehouse's metrics
	// do, so that the views need not read the files' schemas.
	columns bool
}

type coldFile struct {
	path   string
	lo, hi time.Time // from of its rows lies in [lo, hi)
	cols   []string  // its columns
}

// A call records one call of the engine on its Source.
type call struct {
	op     string
	lo, hi time.Time
}

func (c call) String() string {
	f := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02T15:04:05.999999")
	}
	if c.op == "watermark" || c.op == "floor" {
		return c.op
	}
	return c.op + "[" + f(c.lo) + "," + f(c.hi) + ")"
}

func newSource(t testing.TB, tab *series.Table) *memSource {
	return &memSource{t: t, tab: tab, dir: t.TempDir(), floorOK: true}
}

func (s *memSource) record(op string, lo, hi time.Time) func() {
	s.mu.Lock()
	s.calls = append(s.calls, call{op, lo, hi})
	after := s.after
	s.mu.Unlock()
	return func() {
		if after != nil {
			after(op)
		}
	}
}

// Calls returns the calls so far, as text, and forgets them.
func (s *memSource) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.calls {
		out = append(out, c.String())
	}
	s.calls = nil
	return out
}

func (s *memSource) Watermark(ctx context.Context) (time.Time, bool, error) {
	defer s.record("watermark", time.Time{}, time.Time{})()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w, s.hasW, s.wmErr
}

// memSnapshot is the snapshot of a memSource: each read takes the rows
// when it opens.
type memSnapshot struct{}

func (memSnapshot) Close() error { return nil }

func (s *memSource) HotSnapshot(ctx context.Context, conns int) (HotSnapshot, error) {
	return memSnapshot{}, nil
}

// HotRead reads the hot rows of q as they are now, whatever happens to
// the hot tier before they are scanned: a snapshot.
func (s *memSource) HotRead(ctx context.Context, snap HotSnapshot, q series.Range) (HotRead, error) {
	if _, ok := snap.(memSnapshot); !ok {
		return nil, fmt.Errorf("a snapshot of another source: %T", snap)
	}
	lo, hi := q.From, q.To
	defer s.record("hot", lo, hi)()
	s.mu.Lock()
	var rows []series.Reading
	for _, r := range s.hot {
		if inRange(r.From, lo, hi) {
			rows = append(rows, r)
		}
	}
	r, err := newReadingRows(s.tab, rows, s.dict...)
	s.read = r
	s.mu.Unlock()
	return r, err
}

func (s *memSource) HotFloor(ctx context.Context) (Floor, error) {
	defer s.record("floor", time.Time{}, time.Time{})()
	s.mu.Lock()
	defer s.mu.Unlock()
	return Floor{Detached: s.floor, Attached: s.floor, HasAttached: s.floorOK}, nil
}

func (s *memSource) Cold(ctx context.Context, q series.Range) (cold.Plan, error) {
	lo, hi := q.From, q.To
	defer s.record("cold", lo, hi)()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.coldErr != nil {
		return cold.Plan{}, s.coldErr
	}
	p := cold.Plan{Watermark: s.w, HasWatermark: s.hasW, SnapshotID: int64(len(s.files))}
	for _, f := range s.files {
		if (hi.IsZero() || f.lo.Before(hi)) && (lo.IsZero() || lo.Before(f.hi)) {
			p.Files = append(p.Files, f.path)
			if s.columns {
				p.Columns = append(p.Columns, f.cols)
			}
		}
	}
	return p, nil
}

// ColdAlone plans as Cold does: the in-memory source keeps nothing
// elsewhere.
func (s *memSource) ColdAlone(ctx context.Context, q series.Range) (cold.Plan, error) {
	return s.Cold(ctx, q)
}

// ColdAt: the in-memory cold tier keeps no history.
func (s *memSource) ColdAt(ctx context.Context, q series.Range, ref cold.SnapshotRef) (cold.Plan, error) {
	return cold.Plan{}, fmt.Errorf("%w: the in-memory cold tier keeps no history", cold.ErrNoSnapshot)
}

func inRange(t, lo, hi time.Time) bool {
	return !t.Before(lo) && (hi.IsZero() || t.Before(hi))
}

// addHot adds rows to the hot tier.
func (s *memSource) addHot(rows ...series.Reading) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hot = append(s.hot, rows...)
}

// addCold writes rows to a new Parquet file of the cold tier, without
// moving W. Columns named in drop are left out of the file, as in a file
// written before they were added.
func (s *memSource) addCold(rows []series.Reading, drop ...string) {
	s.t.Helper()
	if len(rows) == 0 {
		return
	}
	s.mu.Lock()
	path := filepath.Join(s.dir, fmt.Sprintf("cold-%03d.parquet", len(s.files)))
	s.mu.Unlock()
	writeParquet(s.t, s.tab, path, rows, drop...)
	f := coldFile{path: path, lo: rows[0].From, hi: rows[0].From}
	l, err := layoutOf(s.tab)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, c := range l.cols {
		if !slices.Contains(drop, c.name) {
			f.cols = append(f.cols, c.name)
		}
	}
	for _, r := range rows {
		f.lo = minTime(f.lo, r.From)
		f.hi = maxTime(f.hi, r.From.Add(time.Microsecond))
	}
	s.mu.Lock()
	s.files = append(s.files, f)
	s.mu.Unlock()
}

// archive does what an archival of [W, w) does: its hot rows move to a new
// cold file and W becomes w. detach and commit may be split to put a query
// between them: detach removes the rows from the hot tier and returns a
// commit that adds them to the cold one and moves W.
func (s *memSource) archive(w time.Time) { s.detach(w)() }

func (s *memSource) detach(w time.Time) (commit func()) {
	s.t.Helper()
	s.mu.Lock()
	var moved, kept []series.Reading
	for _, r := range s.hot {
		if r.From.Before(w) {
			moved = append(moved, r)
		} else {
			kept = append(kept, r)
		}
	}
	s.hot = kept
	s.floor = maxTime(s.floor, w)
	s.mu.Unlock()
	return func() {
		s.addCold(moved)
		s.mu.Lock()
		s.w, s.hasW = w, true
		s.mu.Unlock()
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// writeParquet writes rows in the table's layout to path with a DuckDB of
// its own, without restrictions.
func writeParquet(t testing.TB, tab *series.Table, path string, rows []series.Reading, drop ...string) {
	t.Helper()
	l, err := layoutOf(tab)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var defs, keep []string
	for _, c := range l.cols {
		defs = append(defs, ident(c.name)+" "+c.typ)
		if !slices.Contains(drop, c.name) {
			keep = append(keep, ident(c.name))
		}
	}
	if _, err := conn.ExecContext(t.Context(), `CREATE TABLE r (`+strings.Join(defs, ", ")+`)`); err != nil {
		t.Fatal(err)
	}
	err = conn.Raw(func(dc any) error {
		a, err := duckdb.NewAppender(dc.(driver.Conn), "", "", "r")
		if err != nil {
			return err
		}
		for _, r := range rows {
			vals := make([]driver.Value, len(l.cols))
			for i, c := range l.cols {
				get, err := getter(tab, c.name)
				if err != nil {
					return err
				}
				if vals[i], err = get(tab, &r); err != nil {
					return err
				}
			}
			if err := a.AppendRow(vals...); err != nil {
				return err
			}
		}
		return a.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), `COPY (SELECT `+strings.Join(keep, ", ")+` FROM r) TO `+quote(path)+` (FORMAT parquet)`); err != nil {
		t.Fatal(err)
	}
}

// The fixtures.

var (
	cal     = mustCalendar()
	jan2026 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	feb2026 = time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	mar2026 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	apr2026 = time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	rec     = time.Date(2026, 4, 20, 8, 30, 0, 123456000, time.UTC)
)

func mustCalendar() *metering.Calendar {
	c, err := metering.NewCalendar()
	if err != nil {
		panic(err)
	}
	return c
}

// loadProfile declares a 15-minute electricity load profile with an
// identity column, a text attribute and a bigint attribute.
func loadProfile() *series.Table {
	return &series.Table{
		Name:        "power",
		TimeModel:   series.Interval,
		Commodity:   metering.Electricity,
		Resolutions: []metering.Resolution{metering.QuarterHour},
		Columns: []series.Column{
			{Name: "channel", Identity: true, Values: []string{"A", "B"}},
			{Name: "source"},
			{Name: "seq", Type: series.BigInt},
		},
		Width:    series.Monthly,
		Headroom: 31 * 24 * time.Hour,
	}
}

// malo returns the i-th market location id of the fixtures.
func malo(i int) string {
	m, err := metering.MaLoFromPrefix(fmt.Sprintf("5%09d", 100000+i))
	if err != nil {
		panic(err)
	}
	return m.String()
}

// reading returns the quarter hour of location i from from, version 1,
// with value v millionths.
func reading(i int, from time.Time, v int64) series.Reading {
	return series.Reading{
		MaLo:         malo(i),
		OBIS:         "1-1:1.29.0",
		From:         from,
		To:           from.Add(15 * time.Minute),
		Value:        series.Decimal(v),
		Unit:         metering.KilowattHour,
		Quality:      metering.TrueValue,
		Resolution:   metering.QuarterHour,
		Version:      1,
		VersionScope: "9900000000003:" + from.Format("2006-01"),
		Extra:        map[string]string{"channel": "A"},
		RecordedAt:   rec,
		BalancingDay: cal.BalancingDay(from, metering.Electricity),
	}
}

// quarterHours returns n quarter hours of location i from start, values
// 1..n.
func quarterHours(i int, start time.Time, n int) []series.Reading {
	out := make([]series.Reading, n)
	for k := range out {
		out[k] = reading(i, start.Add(time.Duration(k)*15*time.Minute), int64(k+1))
	}
	return out
}

// newEngine returns an engine over s with small settings.
func newEngine(t *testing.T, s *memSource) *Engine {
	t.Helper()
	e, err := single(s.tab, s, Settings{Threads: 1, MemoryLimit: "256MB"})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// query runs sql and fails t on an error.
func query(t *testing.T, e *Engine, sql string) *Result {
	t.Helper()
	res, err := queryOf(t.Context(), e, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return res
}

// count returns the single integer a query returns.
func count(t *testing.T, e *Engine, sql string) int64 {
	t.Helper()
	res := query(t, e, sql)
	if len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
		t.Fatalf("%s: %v", sql, res.Rows)
	}
	n, ok := res.Rows[0][0].(int64)
	if !ok {
		t.Fatalf("%s: %T %v", sql, res.Rows[0][0], res.Rows[0][0])
	}
	return n
}

// inKeyOrder returns rows sorted as the hot tier scans a partition, which
// is the order the cold tier archives in: by market location, OBIS code,
// from, channel and version.
func inKeyOrder(rows []series.Reading) []series.Reading {
	out := slices.Clone(rows)
	slices.SortStableFunc(out, func(a, b series.Reading) int {
		return cmp.Or(strings.Compare(a.MaLo, b.MaLo), strings.Compare(a.OBIS, b.OBIS), a.From.Compare(b.From),
			strings.Compare(a.Extra["channel"], b.Extra["channel"]), cmp.Compare(a.Version, b.Version))
	})
	return out
}
