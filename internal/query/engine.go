package query

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meterstore/meterstore/series"
)

// Settings configure the DuckDB instance of every query.
type Settings struct {
	// MemoryLimit is DuckDB's memory_limit, such as "2GB"; empty means
	// DuckDB's default, 80% of the machine's memory.
	MemoryLimit string
	// Threads is the number of DuckDB threads; 0 means DuckDB's default,
	// one per core.
	Threads int
	// CacheDir is a directory the engine may write to: a query that
	// outgrows MemoryLimit spills into a subdirectory of its own, removed
	// when the query ends. Empty: nothing spills, and such a query fails.
	// A Source may keep its local copies of remote data files here too.
	CacheDir string
	// MaxRows bounds the rows of a result, which is held in memory; a
	// query that returns more fails with ErrTooManyRows. Zero means
	// DefaultMaxRows.
	MaxRows int
	// MaxResultBytes bounds the approximate bytes a result holds in Go's
	// memory, which MemoryLimit does not cover: DuckDB's limit is DuckDB's
	// alone. A query whose result grows past it fails with
	// ErrResultTooLarge. Zero means DefaultMaxResultBytes.
	MaxResultBytes int64
	// Timeout bounds each query, from its analysis to its last row; when
	// it passes, DuckDB is interrupted and the query fails with an error
	// wrapping ErrTimeout and context.DeadlineExceeded. Zero means none.
	Timeout time.Duration
	// DeliveryLag is how long after a balancing day ends its deliveries
	// are due; see the relation completeness.
	DeliveryLag time.Duration
	// Logger receives what the engine does in the background, such as a
	// copy of day sums it could not write; nil means slog.Default().
	Logger *slog.Logger
}

// DefaultMaxRows is the largest result a query returns when
// Settings.MaxRows is zero.
const DefaultMaxRows = 1_000_000

// DefaultMaxResultBytes is the most a result holds in memory when
// Settings.MaxResultBytes is zero.
const DefaultMaxResultBytes = 1 << 30

func (e *Engine) maxRows() int {
	if e.set.MaxRows > 0 {
		return e.set.MaxRows
	}
	return DefaultMaxRows
}

func (e *Engine) maxResultBytes() int64 {
	if e.set.MaxResultBytes > 0 {
		return e.set.MaxResultBytes
	}
	return DefaultMaxResultBytes
}

// An Engine answers SQL over the two tiers of every declared table of a
// deployment, each in the schema of its name (power.readings). It is safe
// for concurrent use; every query runs in a DuckDB instance of its own,
// taken from the one pool of warm instances the engine keeps: the spare
// started ahead, or one kept from a statement locked down alike.
type Engine struct {
	set    Settings
	tables Tables
	// pages, tests only, learns the rows and bytes of each page a
	// statement hands over.
	pages func(rows, bytes int64)
	spare *spare
	// kept are the ducks kept for the next statement locked down alike.
	kept keeper
	// analysed keeps the analyses of recent statements.
	analysed *analyses
	// days are the copies of the hot tier's day sums (hotdays.go).
	days *dayCopies

	mu   sync.RWMutex
	rels []Relation
}

// Tables are the declared tables an Engine reads.
type Tables struct {
	// Names are the declared tables, in the order declared.
	Names []string
	// Open returns the table name, one of Names, opening it if need be;
	// an error says that it is declared but cannot be read now.
	Open func(ctx context.Context, name string) (*Table, error)
}

// A Table is one declared table an Engine reads: its declaration and the
// Source of its two tiers.
type Table struct {
	table  *series.Table
	layout layout
	src    Source
	broken broken // tests only: a deliberately wrong resolution
	// seen is the highest W a read of the table split its tiers at, nil
	// before the first (see reader.belowSeen).
	seen atomic.Pointer[time.Time]
}

// NewTable returns the Table of declaration t, whose tiers src reads.
func NewTable(t *series.Table, src Source) (*Table, error) {
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	if src == nil {
		return nil, errors.New("query: a source is required")
	}
	l, err := layoutOf(t)
	if err != nil {
		return nil, err
	}
	return &Table{table: t, layout: l, src: src}, nil
}

// New returns an Engine over tables. It starts one DuckDB instance, which
// checks s and serves the first query. The engine keeps one instance
// started ahead of the next query, closed when no query came for half a
// minute, and keeps the instances of statements that ran for the next
// statement locked down alike (see keep.go).
func New(s Settings, tables Tables) (*Engine, error) {
	if s.Threads < 0 {
		return nil, fmt.Errorf("query: %d threads", s.Threads)
	}
	if s.MaxResultBytes < 0 || s.Timeout < 0 {
		return nil, fmt.Errorf("query: negative bound: max result bytes %d, timeout %v", s.MaxResultBytes, s.Timeout)
	}
	if tables.Open == nil && len(tables.Names) > 0 {
		return nil, errors.New("query: tables without a way to open them")
	}
	if s.CacheDir != "" {
		log := s.Logger
		if log == nil {
			log = slog.Default()
		}
		sweepSpills(s.CacheDir, log)
	}
	sp := &spare{set: s}
	// Starting one checks s; it is the first query's.
	inst, err := start(context.Background(), s, sp.threads(false))
	if err != nil {
		return nil, err
	}
	// Every duck starts alike: what it holds then is what a kept one
	// must hold besides its views (see keep.go).
	base, err := inst.listCatalog(context.Background(), nil)
	if err != nil {
		inst.close()
		return nil, err
	}
	sp.started.Add(1)
	sp.put(inst)
	return &Engine{set: s, tables: Tables{Names: slices.Clone(tables.Names), Open: tables.Open}, spare: sp, kept: keeper{base: base}, analysed: newAnalyses(), days: newDayCopies(s)}, nil
}

// Close waits for the copies of day sums being written (hotdays.go) and
// for the DuckDB instances of ended statements to close or be kept, and closes the one started ahead and those kept, so that no spill
// directory is left. The engine stays usable.
func (e *Engine) Close() {
	e.spare.close()
	e.kept.close()
	// After the retired statements, which start the writing of copies.
	e.days.wait()
}

// SetRelations replaces the in-memory relations, such as system.tables,
// that every later query sees. The engine keeps rels; the caller must not
// modify them afterwards. It is safe for concurrent use with Query.
func (e *Engine) SetRelations(rels []Relation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.rels = slices.Clone(rels)
}

func (e *Engine) relations() []Relation {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.rels
}

// A Header describes the answer to a query before its first row: what
// Stream hands its start function, and what a Result holds besides its
// rows.
type Header struct {
	Columns []string // column names
	Types   []string // DuckDB type names, such as VARCHAR or DECIMAL(18,6)
	// Watermark is W of the cold snapshot the query read, or of the last
	// read of it when no cold file was needed; HasWatermark is false when
	// nothing is archived yet, when no tier was read, and in an answer
	// from the hot tier alone.
	Watermark    time.Time
	HasWatermark bool
	// Tiers names the tiers read, "cold" before "hot".
	Tiers []string
	// Snapshot is the ID of the cold snapshot whose files were read below
	// Watermark, 0 if none was planned. In a read as of a snapshot
	// (AsOf), it is that snapshot, Watermark is its W and SnapshotAt the
	// time it was committed.
	Snapshot   int64
	AsOf       bool
	SnapshotAt time.Time
	// Ceiling is the recorded_at ceiling applied to the rows at or above
	// Watermark, zero if none: ReadOptions.KnownAt, or in a read as of a
	// snapshot the earlier of KnownAt and SnapshotAt. KnownAt is ReadOptions.KnownAt, which applies to the
	// snapshot's own files too.
	Ceiling time.Time
	KnownAt time.Time
	// Range is the range of "from" the statement could read, and so the
	// range fetched from the tiers.
	Range series.Range
	// Tables says how each table the statement read was read, its
	// default table first, then the others it names, by name; the fields
	// above are the default table's, zero if it read none. A statement
	// that reads no table has none.
	Tables []TableRead
	// Mode is the tiers the query read (ReadOptions.Mode); each of
	// Tables says what it could not see in a historical or operational
	// read.
	Mode ReadMode
	// Timing says where the time before the first row went.
	Timing Timing
}

// Timing splits the time a query took before its first row.
type Timing struct {
	Open time.Duration // starting DuckDB, analysing the statement, the system relations
	Hot  time.Duration // opening the hot tier's snapshot, of every table read; its rows cross during Run
	Plan time.Duration // planning the cold files, copying remote ones, of every table read
	// Read is the whole of reading the tiers: Hot and Plan, and creating
	// the relations over the rows and files, of every table read.
	Read time.Duration
	Run  time.Duration // computing the result: the scans of both tiers' rows
	// HotRows is the rows the hot tier sent during Run, HotBytes their
	// values' bytes, and HotScan the time from the first batch asked for
	// to the last one received (the longest of the tables read):
	// HotRows/HotScan is the rate they crossed at.
	HotRows  int64
	HotBytes int64
	HotScan  time.Duration
	// DayCopies is the copies of day sums the statement's relation daily
	// read in place of summing the rows they are of (see hotdays.go).
	DayCopies int
	// Steps is the time of each step before the first row, in the order
	// they ran, a step of several tables once for each: the fixed cost of
	// a statement, step by step (see the Step constants).
	Steps []Step
}

// A Step is the time one step of a statement took.
type Step struct {
	Name string
	Took time.Duration
}

// The steps of Timing.Steps.
const (
	StepInstance    = "instance"     // taking the spare DuckDB instance
	StepAnalysis    = "analysis"     // analysing the statement (or finding it analysed)
	StepRelations   = "relations"    // the in-memory relations, such as system.tables
	StepWatermark   = "watermark"    // reading W
	StepHotSnapshot = "hot_snapshot" // the hot snapshot, the partition list, the ledger's W (folded), the table functions
	StepColdPlan    = "cold_plan"    // planning the cold files
	StepFloor       = "floor"        // the hot floor that vouches for the hot read
	StepViews       = "views"        // the views over the tiers
	StepLockdown    = "lockdown"     // locking DuckDB down
	StepDescribe    = "describe"     // the statement's columns
	StepCreate      = "create"       // computing the result (CREATE TABLE AS)
	StepFinish      = "finish"       // ending the hot reads and the snapshot
	StepFirstPage   = "first_page"   // reading the first page of the result
)

// step adds the time since begin to t.Steps as name's, and returns now,
// the beginning of the next step.
func (t *Timing) step(name string, begin time.Time) time.Time {
	now := time.Now()
	t.Steps = append(t.Steps, Step{Name: name, Took: now.Sub(begin)})
	return now
}

// A Result is the answer to a query, held in memory.
type Result struct {
	Header
	Rows [][]any // values as duckdb-go returns them
}

// errTimedOut is the cause of a query context whose Settings.Timeout passed.
var errTimedOut = errors.New("query timeout")
