// Package agebench measures how a table's metadata operations cost as the
// table ages: a table is given N commits through MeterStore's catalog, on
// each log backend, and then the log's Head, one more commit, LoadTable and
// scan planning are timed. With the table logs truncated (the catalog's
// default) the costs of the log should not depend on N.
package agebench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/consensus"
	"github.com/meterstore/meterstore/consensus/bloblog"
	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/internal/cold"
)

// The log backends a run can age a table on.
const (
	LogPostgres = "postgres"
	LogObject   = "object"
)

// Config describes a run.
type Config struct {
	// Ages are the numbers of commits each table is given before it is
	// measured.
	Ages []int `json:"ages"`
	// Logs are the backends, LogPostgres and LogObject.
	Logs []string `json:"logs"`
	// Samples is how often each operation is timed per table.
	Samples int `json:"samples"`
	// Keep is the catalog's TableLogKeep: 0 its default, -1 no truncation.
	Keep int `json:"keep"`
	// Compact ages each table with archivals of daily windows through the
	// cold tier instead of property updates, then compacts it and
	// measures again.
	Compact bool `json:"compact"`
	// Dir holds the warehouses; empty means a temporary directory.
	Dir      string       `json:"-"`
	Progress io.Writer    `json:"-"`
	Logger   *slog.Logger `json:"-"`
}

// DefaultConfig ages tables by 30, 365 and 1,000 commits on both backends,
// a few minutes on two cores; the ten years of daily archival are
// Ages 30, 365, 3650, which take longer because a commit's fork check of
// the metadata mirror lists every version the table ever had.
func DefaultConfig() Config {
	return Config{Ages: []int{30, 365, 1000}, Logs: []string{LogPostgres, LogObject}, Samples: 30}
}

// A Point is one table of one age on one backend. Latencies are p50s in
// milliseconds over Samples runs.
type Point struct {
	Log string `json:"log"`
	Age int    `json:"age"`
	// AgingSeconds is how long giving the table its commits took.
	AgingSeconds float64 `json:"aging_s"`
	// Entries is how many commits the table's log holds after aging.
	Entries int     `json:"log_entries"`
	Head    float64 `json:"head_p50_ms"`
	Commit  float64 `json:"commit_p50_ms"`
	Load    float64 `json:"load_table_p50_ms"`
	Plan    float64 `json:"plan_files_p50_ms"`
	// With Config.Compact: the compaction and the latencies after it.
	Compaction     *cold.Compaction `json:"compaction,omitempty"`
	CompactSeconds float64          `json:"compact_s,omitempty"`
	HeadAfter      float64          `json:"head_after_p50_ms,omitempty"`
	CommitAfter    float64          `json:"commit_after_p50_ms,omitempty"`
	LoadAfter      float64          `json:"load_table_after_p50_ms,omitempty"`
	PlanAfter      float64          `json:"plan_files_after_p50_ms,omitempty"`
}

// A Ratio compares the oldest table with the youngest on one backend.
type Ratio struct {
	Log    string  `json:"log"`
	From   int     `json:"from_age"`
	To     int     `json:"to_age"`
	Head   float64 `json:"head"`
	Commit float64 `json:"commit"`
	Load   float64 `json:"load_table"`
	Plan   float64 `json:"plan_files"`
	// After compaction, with Config.Compact.
	HeadAfter   float64 `json:"head_after,omitempty"`
	CommitAfter float64 `json:"commit_after,omitempty"`
	LoadAfter   float64 `json:"load_table_after,omitempty"`
	PlanAfter   float64 `json:"plan_files_after,omitempty"`
}

// A Result is what a run measured.
type Result struct {
	Config Config `json:"config"`
	// CommitKind says what the aging commits were.
	CommitKind string  `json:"commit_kind"`
	Points     []Point `json:"points"`
	Ratios     []Ratio `json:"ratios"`
}

// Run ages one table per backend and age and measures it. pgURL is the
// server for the PostgreSQL log.
func Run(ctx context.Context, pgURL string, c Config) (*Result, error) {
	if len(c.Ages) == 0 || slices.Min(c.Ages) < 2 || c.Samples < 1 {
		return nil, fmt.Errorf("agebench: want ages of at least 2 commits (the create and an append) and at least one sample")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	dir := c.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "meterstore-agebench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	res := &Result{Config: c, CommitKind: "property update (an iceberg-go transaction with one SetProperties, deleting the metadata file that leaves the metadata log) after one append of 4 rows"}
	if c.Compact {
		res.CommitKind = "archival of a daily window of 4 rows through the cold tier (a data file and a manifest each); the timed commit is a property update"
	}
	for _, lg := range c.Logs {
		from := len(res.Points)
		for _, age := range c.Ages {
			p, err := runOne(ctx, pgURL, filepath.Join(dir, fmt.Sprintf("%s-%d", lg, age)), lg, age, c)
			if err != nil {
				return nil, fmt.Errorf("agebench: %s log, %d commits: %w", lg, age, err)
			}
			fmt.Fprintf(c.Progress, "agebench: %s, %d commits: aged in %.1fs, %d log entries, head %.2f ms, commit %.2f ms, load %.2f ms, plan %.2f ms\n",
				lg, age, p.AgingSeconds, p.Entries, p.Head, p.Commit, p.Load, p.Plan)
			res.Points = append(res.Points, p)
		}
		first, last := res.Points[from], res.Points[len(res.Points)-1]
		if last.Age != first.Age {
			r := Ratio{Log: lg, From: first.Age, To: last.Age,
				Head: last.Head / first.Head, Commit: last.Commit / first.Commit,
				Load: last.Load / first.Load, Plan: last.Plan / first.Plan}
			if c.Compact {
				r.HeadAfter, r.CommitAfter = last.HeadAfter/first.HeadAfter, last.CommitAfter/first.CommitAfter
				r.LoadAfter, r.PlanAfter = last.LoadAfter/first.LoadAfter, last.PlanAfter/first.PlanAfter
			}
			res.Ratios = append(res.Ratios, r)
		}
	}
	return res, nil
}

var schema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "meter", Type: iceberg.PrimitiveTypes.String, Required: true},
	iceberg.NestedField{ID: 2, Name: "value", Type: iceberg.PrimitiveTypes.Float64, Required: true},
)

func runOne(ctx context.Context, pgURL, dir, lg string, age int, c Config) (Point, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Point{}, err
	}
	wh, err := catalog.OpenWarehouse(ctx, "file://"+dir)
	if err != nil {
		return Point{}, err
	}
	defer wh.Bucket.Close()
	var l consensus.Log
	switch lg {
	case LogObject:
		if l, err = bloblog.New(wh.Bucket, "_log/"); err != nil {
			return Point{}, err
		}
	case LogPostgres:
		cfg, err := pgxpool.ParseConfig(pgURL)
		if err != nil {
			return Point{}, err
		}
		pl, err := postgres.Open(ctx, cfg, postgres.Options{Schema: fmt.Sprintf("agebench_%d_%d", age, time.Now().UnixNano())})
		if err != nil {
			return Point{}, err
		}
		defer pl.Close()
		l = pl
	default:
		return Point{}, fmt.Errorf("log %q: want %q or %q", lg, LogPostgres, LogObject)
	}
	cat, err := catalog.New(catalog.Options{Warehouse: wh, Log: l, TableLogKeep: c.Keep, Logger: c.Logger})
	if err != nil {
		return Point{}, err
	}
	ident := table.Identifier{"bench", "aged"}
	var (
		tbl     *table.Table
		compact func(context.Context) (cold.Compaction, error)
		start   time.Time
	)
	n := 0
	// Commits go through iceberg-go's transaction, as the cold tier's do.
	commit := func() error {
		n++
		tx := tbl.NewTransaction()
		if err := tx.SetProperties(iceberg.Properties{"agebench.n": strconv.Itoa(n)}); err != nil {
			return err
		}
		next, err := tx.Commit(ctx)
		if err == nil {
			tbl = next
		}
		return err
	}
	if c.Compact {
		start = time.Now()
		// The create and the cold tier's property commits count as
		// commits too; the log's entries say how many there were.
		if tbl, compact, err = ageArchived(ctx, cat, age-1, c.Logger); err != nil {
			return Point{}, err
		}
	} else {
		if err := cat.CreateNamespace(ctx, table.Identifier{"bench"}, nil); err != nil {
			return Point{}, err
		}
		// As the cold tier's tables: each commit deletes the metadata file
		// that drops out of the metadata log.
		tbl, err = cat.CreateTable(ctx, ident, schema, icecatalog.WithProperties(iceberg.Properties{
			table.MetadataDeleteAfterCommitEnabledKey: "true",
		}))
		if err != nil {
			return Point{}, err
		}
		if tbl, err = appendRows(ctx, tbl); err != nil {
			return Point{}, err
		}
		start = time.Now()
		for range age - 2 { // the create and the append are commits too
			if err := commit(); err != nil {
				return Point{}, err
			}
		}
	}
	p := Point{Log: lg, Age: age, AgingSeconds: time.Since(start).Seconds()}
	shard := "table/bench.aged"
	es, err := l.Scan(ctx, shard, 0, 1_000_000)
	if err != nil {
		return Point{}, err
	}
	p.Entries = len(es)

	wantTasks := 1
	if c.Compact {
		wantTasks = 0 // as many as the table has
	}
	m := measurer{ctx: ctx, log: l, shard: shard, cat: cat, ident: ident, commit: commit, samples: c.Samples, wantTasks: wantTasks}
	if p.Head, p.Commit, p.Load, p.Plan, err = m.run(); err != nil {
		return Point{}, err
	}
	if compact == nil {
		return p, nil
	}
	t0 := time.Now()
	done, err := compact(ctx)
	if err != nil {
		return Point{}, fmt.Errorf("compact: %w", err)
	}
	p.CompactSeconds, p.Compaction = time.Since(t0).Seconds(), &done
	if tbl, err = cat.LoadTable(ctx, ident); err != nil {
		return Point{}, err
	}
	if p.HeadAfter, p.CommitAfter, p.LoadAfter, p.PlanAfter, err = m.run(); err != nil {
		return Point{}, err
	}
	return p, nil
}

// A measurer times a table's metadata operations.
type measurer struct {
	ctx       context.Context
	log       consensus.Log
	shard     string
	cat       icecatalog.Catalog
	ident     table.Identifier
	commit    func() error
	samples   int
	wantTasks int // files a scan plans; 0: any number
}

// run times, samples times each, interleaved: the log's Head, a commit,
// LoadTable and planning a scan; it returns their medians in ms.
func (m measurer) run() (head, commit, load, plan float64, err error) {
	var hs, cs, ls, ps []float64
	timed := func(xs *[]float64, fn func() error) error {
		t0 := time.Now()
		err := fn()
		*xs = append(*xs, float64(time.Since(t0).Microseconds())/1000)
		return err
	}
	for range m.samples {
		err := timed(&hs, func() error {
			_, ok, err := m.log.Head(m.ctx, m.shard)
			if err == nil && !ok {
				err = fmt.Errorf("the table's log is empty")
			}
			return err
		})
		if err != nil {
			return 0, 0, 0, 0, err
		}
		if err := timed(&cs, m.commit); err != nil {
			return 0, 0, 0, 0, err
		}
		var t *table.Table
		if err := timed(&ls, func() (err error) { t, err = m.cat.LoadTable(m.ctx, m.ident); return err }); err != nil {
			return 0, 0, 0, 0, err
		}
		err = timed(&ps, func() error {
			tasks, err := t.Scan().PlanFiles(m.ctx)
			if err == nil && m.wantTasks > 0 && len(tasks) != m.wantTasks {
				err = fmt.Errorf("planned %d files, want %d", len(tasks), m.wantTasks)
			}
			return err
		})
		if err != nil {
			return 0, 0, 0, 0, err
		}
	}
	return median(hs), median(cs), median(ls), median(ps), nil
}

// appendRows gives the table one snapshot with one small data file, so
// that planning a scan reads a manifest list and a manifest.
func appendRows(ctx context.Context, tbl *table.Table) (*table.Table, error) {
	sc, err := table.SchemaToArrowSchema(schema, nil, true, false)
	if err != nil {
		return nil, err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range 4 {
		b.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("meter-%d", i))
		b.Field(1).(*array.Float64Builder).Append(float64(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	tx := tbl.NewTransaction()
	if err := tx.AppendTable(ctx, at, 4, nil); err != nil {
		return nil, err
	}
	return tx.Commit(ctx)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
