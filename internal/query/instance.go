package query

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

// A duck is one DuckDB database and its one connection: every table,
// view and setting of a statement lives on that connection. It serves one
// statement, or, locked down, the statements locked down alike one after
// the other (see keep.go).
type duck struct {
	db    *sql.DB
	conn  *sql.Conn
	spill string   // the directory DuckDB spills to, removed on close
	held  *os.File // spill's lock, held until it is removed (spill.go)
	// registered counts the table functions registered: a duck with one
	// is never kept (see keep.go).
	registered int
	// threads is the DuckDB threads it started with, 0 for DuckDB's
	// default (see start), or the lockdown set, which a statement that
	// took it before it knew it scans files does (see spare).
	threads int
	// key is the lockdown it is locked with (see lockKey), "" before it.
	// views are the statements that created the views it holds, in the
	// schemas of the tables places, which the next statement locked alike
	// finds again if its statement may leave it (keepable; see keep.go).
	key, views string
	places     []string
	keepable   bool
}

// An instance is what one statement holds of DuckDB: its duck, taken when
// the statement first needs DuckDB (see need), and the statement's state
// on it.
type instance struct {
	*duck // nil until taken
	// take takes a duck for the statement, for one that scans cold files
	// if wide; took, if set, learns how long that took.
	take func(ctx context.Context, wide bool) (*instance, error)
	took func(time.Duration)
	// wide says the statement scans cold files, as far as it knows when
	// it first needs DuckDB (see spare).
	wide bool
	// hot are the hot reads whose table functions the statement scans,
	// closed when it has run.
	hot  []*hotScan
	snap HotSnapshot // of the hot tier, for every table read; nil if none
	// funcs counts the prefixes of table functions drawn (nextFunc).
	funcs int
	// columns are the names the statement may read columns by, nil for
	// every column (see analysis.columns).
	columns map[string]bool
	// reads are how each place's views read the tiers, by its schema.
	reads map[string]tierRead
	// pending are the statements that create the statement's views, run
	// just before its lockdown (see Statement.lock): a statement that needs
	// DuckDB first there can take a duck kept locked down alike.
	pending []string
	// after are started once the statement has ended (see close), such
	// as the writing of copies it missed.
	after []func()
}

// need makes sure inst has a duck, taking one if it has none.
func (inst *instance) need(ctx context.Context) error {
	if inst.duck != nil {
		return nil
	}
	begin := time.Now()
	d, err := inst.take(ctx, inst.wide)
	if err != nil {
		return err
	}
	inst.duck = d.duck
	if inst.took != nil {
		inst.took(time.Since(begin))
	}
	return nil
}

// define adds stmts, which create views, to the statement's pending ones.
func (inst *instance) define(stmts ...string) { inst.pending = append(inst.pending, stmts...) }

// A tierRead is how a place's views read the tiers: the hot read, if
// any, the split, and the view's conditions besides it.
type tierRead struct {
	hot *hotScan
	s   split
	v   view
	// cold is the SELECT of readings' resolved rows below the split, ""
	// if none (see createViews).
	cold string
	// views create readings and readings_versions, defined once the
	// statement reads them (see defineReadings).
	views   []string
	defined bool
}

// defineReadings defines the views readings and readings_versions of p,
// once: a statement that reads neither, nor daily over them, leaves them
// out, and with them the table functions of the hot tier they call.
func (inst *instance) defineReadings(p place) {
	rd, ok := inst.reads[p.out]
	if !ok || rd.defined {
		return
	}
	inst.define(rd.views...)
	rd.defined = true
	inst.reads[p.out] = rd
}

// nextFunc returns a prefix for the names of new table functions: the
// statement's own, the only ones its duck registers (see register).
func (inst *instance) nextFunc() string {
	inst.funcs++
	return "meterstore_hot_" + strconv.Itoa(inst.funcs)
}

// releaseUncalled closes the hot reads none of whose table functions the
// statement's views call, and the hot snapshot if no read is left: a
// statement whose relation daily takes the hot tier's day sums from
// copies reads nothing more of it, and may leave its duck to the next.
func (inst *instance) releaseUncalled(views string) error {
	var errs []error
	inst.hot = slices.DeleteFunc(inst.hot, func(s *hotScan) bool {
		if s.calledBy(views) {
			return false
		}
		errs = append(errs, s.close())
		return true
	})
	if len(inst.hot) == 0 && inst.snap != nil {
		errs = append(errs, inst.snap.Close())
		inst.snap = nil
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("query: hot tier: %w", err)
	}
	return nil
}

// dropHot closes the hot read of s, which a read of the tiers tried and
// gave up; its functions stay, unused.
func (inst *instance) dropHot(s *hotScan) {
	s.close()
	inst.hot = slices.DeleteFunc(inst.hot, func(x *hotScan) bool { return x == s })
}

// finish ends the hot reads once the statement has run, giving their
// connections back, and adds what they moved to h: to the table read of
// each and to h's Timing. A failed statement's error is the first a hot
// read failed with, if any: DuckDB has only its text.
func (inst *instance) finish(h *Header, err error) error {
	for _, s := range inst.hot {
		if ferr := s.failed(); ferr != nil && err != nil {
			err = fmt.Errorf("query: hot tier: %w", ferr)
		}
		if cerr := s.close(); cerr != nil && err == nil {
			err = fmt.Errorf("query: hot tier: %w", cerr)
		}
		rows, bytes, span := s.read.Moved()
		h.Timing.HotRows += rows
		h.Timing.HotBytes += bytes
		h.Timing.HotScan = max(h.Timing.HotScan, span)
		for i := range h.Tables {
			if t := &h.Tables[i]; t.Name == s.table {
				t.Timing.HotRows += rows
				t.Timing.HotBytes += bytes
				t.Timing.HotScan = max(t.Timing.HotScan, span)
			}
		}
	}
	inst.hot = nil
	if inst.snap != nil {
		if cerr := inst.snap.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("query: hot tier: %w", cerr)
		}
		inst.snap = nil
	}
	return err
}

// start starts an in-memory DuckDB configured by s, on threads threads (0:
// DuckDB's default), with the calendar functions, that does not spill
// until its lockdown: a spare instance holds no directory while it waits,
// however long, and whoever closes it.
func start(ctx context.Context, s Settings, threads int) (*instance, error) {
	q := url.Values{}
	if threads > 0 {
		q.Set("threads", strconv.Itoa(threads))
	}
	if s.MemoryLimit != "" {
		q.Set("memory_limit", s.MemoryLimit)
	}
	c, err := connector(q, "")
	if err != nil {
		return nil, err
	}
	inst := &instance{duck: &duck{db: sql.OpenDB(c), threads: threads}}
	if inst.conn, err = inst.db.Conn(ctx); err != nil {
		inst.close()
		return nil, fmt.Errorf("query: connect to DuckDB: %w", err)
	}
	if _, err := inst.conn.ExecContext(ctx, `ATTACH ':memory:' AS `+database+`; USE `+database); err != nil {
		inst.close()
		return nil, fmt.Errorf("query: the in-memory database %s: %w", database, err)
	}
	if err := registerFunctions(inst.conn); err != nil {
		inst.close()
		return nil, err
	}
	return inst, nil
}

// connector returns a connector to a new in-memory DuckDB with the options
// q, spilling to the directory spill (empty: never). No extension is
// installed or loaded on demand: Parquet, JSON and ICU are built in. Every
// connection has the time zone UTC.
func connector(q url.Values, spill string) (*duckdb.Connector, error) {
	q.Set("autoinstall_known_extensions", "false")
	q.Set("autoload_known_extensions", "false")
	q.Set("allow_community_extensions", "false")
	// Unset, DuckDB would spill into .tmp in the working directory.
	q.Set("temp_directory", spill)
	c, err := duckdb.NewConnector("?"+q.Encode(), func(ex driver.ExecerContext) error {
		// The views over the cold files and the statement bind them each:
		// with the cache their footers are read once. Data files are
		// immutable.
		_, err := ex.ExecContext(context.Background(), `SET TimeZone = 'UTC'; SET parquet_metadata_cache = true`, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("query: open DuckDB: %w", err)
	}
	return c, nil
}

// lockdown ends external access except reading the files, and locks the
// configuration so that no statement can change that again. The
// statement runs on threads threads, 0 for DuckDB's default: one that
// reads the hot tier alone runs on one, for it gets its rows from
// PostgreSQL through the table functions' Go callbacks, and a second
// DuckDB thread mostly waits for them, spinning on a core PostgreSQL and
// the decoding need (measured: one thread answered a hot day's totals
// faster).
//
// search, if set, is the schema searched first for an unqualified
// relation (the statement's default table's), set in the same call; so is
// the directory it spills into in cacheDir, if any.
func (d *duck) lockdown(ctx context.Context, files []string, threads int, search, cacheDir string) error {
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = quote(f)
	}
	var stmts []string
	spill, err := d.spillInto(cacheDir)
	if err != nil {
		return err
	}
	if spill != "" {
		stmts = append(stmts, spill)
	}
	if search != "" {
		stmts = append(stmts, `SET search_path = `+quote(database+`.`+ident(search)+`,`+database+`.main`))
	}
	stmts = append(stmts,
		`SET allowed_paths = [`+strings.Join(quoted, ", ")+`]`,
		`SET enable_external_access = false`,
	)
	if threads != d.threads && threads > 0 {
		stmts = append(stmts, `SET threads = `+strconv.Itoa(threads))
		d.threads = threads
	}
	// One call, the lock last: the settings before it are DuckDB's to
	// apply one after the other.
	stmts = append(stmts, `SET lock_configuration = true`)
	if _, err := d.conn.ExecContext(ctx, strings.Join(stmts, "; ")); err != nil {
		return fmt.Errorf("query: lock down DuckDB: %w", err)
	}
	return nil
}

// close closes the statement's hot reads and its duck, if any.
func (inst *instance) close() error {
	var errs []error
	for _, s := range inst.hot {
		errs = append(errs, s.close())
	}
	if inst.snap != nil {
		errs = append(errs, inst.snap.Close())
	}
	if inst.duck != nil {
		errs = append(errs, inst.duck.close())
	}
	for _, f := range inst.after {
		f()
	}
	inst.after = nil
	return errors.Join(errs...)
}

func (d *duck) close() error {
	var errs []error
	if d.conn != nil {
		errs = append(errs, d.conn.Close())
	}
	if d.db != nil {
		errs = append(errs, d.db.Close())
	}
	if d.spill != "" {
		errs = append(errs, os.RemoveAll(d.spill))
	}
	if d.held != nil {
		errs = append(errs, d.held.Close())
	}
	return errors.Join(errs...)
}

// quote returns s as an SQL string literal.
func quote(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// ident returns s as an SQL identifier.
func ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
