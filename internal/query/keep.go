package query

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Keeping a duck. Starting DuckDB, creating the views and locking it down,
// and closing it again, cost a statement over a month of cold files about
// as much as its scan: a fresh database also reads the files' footers
// anew and faults its memory in, and starting the next spare and closing
// the last compete with the statement for the cores. So the duck of a
// statement that ran to its end is kept for the next statement that needs
// exactly the same lockdown (lockKey: the same tables, default table,
// threads and allowed files), which finds the views too if its own are
// the same text. The lockdown cannot be undone, which is why the key must
// match: a statement never runs with a file allowed that it did not plan.
//
// Only a statement whose duck holds nothing of it but its views and its
// result may leave it: none whose views call the hot tier's table
// functions (registered, they cannot be unregistered) or read the
// in-memory relations (the caller's rows of system.*). A function is
// registered only when a view calls it, and a hot read none of whose
// functions a view calls is closed before the lockdown: a statement of
// daily whose hot day sums all come from copies (hotdays.go) reads no
// more of the hot tier once it planned, and may leave its duck.
//
// A statement is a single SELECT and creates nothing; still, before a
// duck is kept its result is dropped, its random numbers seeded anew, and
// its catalog checked against the one every duck starts with plus the
// views: one that differs is closed. This
// happens after the statement, in the background: the check lists the
// catalog without duckdb_functions(), which takes about 12 ms (it was the
// cost of an earlier try that checked on the statement's own path).

// maxKept bounds the ducks kept between statements, of all keys.
const maxKept = 4

// viewNames are the views a statement creates in the schema of a table
// it reads (see createViews, createDaily, createCompleteness).
var viewNames = []string{"completeness", "daily", "readings", "readings_versions"}

// A keeper holds the ducks kept for reuse, by their key.
type keeper struct {
	mu    sync.Mutex
	byKey map[string][]*duck
	n     int
	idle  map[*duck]*time.Timer
	// base is what listCatalog lists of a duck as it starts.
	base string
	// reused counts the statements that took a kept duck (tests).
	reused int
}

// take returns a duck kept for key, nil if there is none.
func (k *keeper) take(key string) *duck {
	k.mu.Lock()
	defer k.mu.Unlock()
	list := k.byKey[key]
	if len(list) == 0 {
		return nil
	}
	d := list[len(list)-1]
	if len(list) == 1 {
		delete(k.byKey, key)
	} else {
		k.byKey[key] = list[:len(list)-1]
	}
	k.n--
	k.idle[d].Stop()
	delete(k.idle, d)
	k.reused++
	return d
}

// put keeps d, reset, under its key and reports whether it did: not when
// maxKept are kept. A kept duck is closed after spareIdle unless a
// statement takes it.
func (k *keeper) put(d *duck) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.n >= maxKept {
		return false
	}
	if k.byKey == nil {
		k.byKey, k.idle = map[string][]*duck{}, map[*duck]*time.Timer{}
	}
	k.byKey[d.key] = append(k.byKey[d.key], d)
	k.n++
	k.idle[d] = time.AfterFunc(spareIdle, func() {
		if k.remove(d) {
			d.close()
		}
	})
	return true
}

// remove takes d out of the kept ducks and reports whether it was one.
func (k *keeper) remove(d *duck) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	list := k.byKey[d.key]
	i := slices.Index(list, d)
	if i < 0 {
		return false
	}
	if list = slices.Delete(list, i, i+1); len(list) == 0 {
		delete(k.byKey, d.key)
	} else {
		k.byKey[d.key] = list
	}
	delete(k.idle, d)
	k.n--
	return true
}

// close closes every kept duck.
func (k *keeper) close() {
	k.mu.Lock()
	all, idle := k.byKey, k.idle
	k.byKey, k.idle, k.n = nil, nil, 0
	k.mu.Unlock()
	for _, list := range all {
		for _, d := range list {
			idle[d].Stop()
			d.close()
		}
	}
}

// keep resets d, whose statement ran to its end, and keeps it, or closes
// it if it cannot be kept; in the background, which Engine.Close waits
// for.
func (e *Engine) keep(d *duck) {
	e.spare.retiring.Add(1)
	go func() {
		defer e.spare.retiring.Done()
		if !d.reset(context.Background(), e.kept.base) || !e.kept.put(d) {
			d.close()
		}
	}()
}

// lockKey returns the key of a duck locked down for the tables read, in
// the order read, with the lockdown's files, threads and search schema.
func lockKey(tables, files []string, threads int, search string) string {
	var b strings.Builder
	for _, t := range tables {
		b.WriteString(quote(t))
		b.WriteByte(',')
	}
	b.WriteString("|" + quote(search) + "|" + strconv.Itoa(threads) + "|")
	for _, f := range files {
		b.WriteString(quote(f))
		b.WriteByte(',')
	}
	return b.String()
}

// lock creates the statement's views (instance.pending) and locks its
// duck down for files, threads and search (duck.lockdown). A statement
// that may leave its duck to the next takes one kept locked down alike,
// if there is one, and replaces its views unless they are the
// statement's own already.
func (st *Statement) lock(ctx context.Context, h *Header, files []string, threads int, search string) error {
	inst := st.inst
	views := strings.Join(inst.pending, ";\n")
	inst.pending = nil
	if err := inst.releaseUncalled(views); err != nil {
		return err
	}
	keepable := !st.a.relations && len(inst.hot) == 0 && inst.snap == nil && (inst.duck == nil || inst.registered == 0)
	key := lockKey(st.Tables(), files, threads, search)
	if keepable {
		// A duck the statement holds already was taken for its analysis
		// or a file's columns, which leave nothing on it (keepable: no
		// table function, no relation): it becomes the spare again.
		begin := time.Now()
		if d := st.e.kept.take(key); d != nil {
			if inst.duck != nil {
				st.e.spare.put(&instance{duck: inst.duck})
			}
			inst.duck = d
			h.Timing.step(StepInstance, begin)
		}
	}
	if err := inst.need(ctx); err != nil {
		return err
	}
	for _, s := range inst.hot {
		n, err := s.register(inst.conn, views)
		inst.registered += n
		if err != nil {
			return err
		}
	}
	begin := time.Now()
	if inst.key == "" || inst.views != views {
		run := views
		if inst.key != "" {
			// Kept with the views of another statement of the same tables.
			run = dropViews(st.Tables()) + run
		}
		inst.views = ""
		if run != "" {
			// One call: the statements are DuckDB's to run one after the
			// other.
			if _, err := inst.conn.ExecContext(ctx, run); err != nil {
				return fmt.Errorf("query: create the views: %w", err)
			}
		}
	}
	h.Timing.step(StepViews, begin)
	if inst.key == "" {
		begin := time.Now()
		if threads > 0 && threads != inst.threads {
			st.e.spare.rethreaded.Add(1)
		}
		if err := inst.lockdown(ctx, files, threads, search, st.e.set.CacheDir); err != nil {
			return err
		}
		inst.key = key
		h.Timing.step(StepLockdown, begin)
	}
	inst.keepable = keepable
	if keepable {
		inst.views, inst.places = views, st.Tables()
	}
	return nil
}

// dropViews returns the statements that drop the views of tables.
func dropViews(tables []string) string {
	var b strings.Builder
	for _, t := range tables {
		for _, v := range viewNames {
			b.WriteString(`DROP VIEW IF EXISTS ` + database + `.` + rel(placeOf(t).out, v) + ";\n")
		}
	}
	return b.String()
}

// catalogSQL lists, one a line, every object a statement could create or
// leave behind but functions and macros, which only statements other than
// a SELECT create: tables (temporary ones too), views, schemas,
// sequences, indexes, types, variables, prepared statements and attached
// databases.
const catalogSQL = `SELECT coalesce(string_agg(x, chr(10) ORDER BY x), '') FROM (
SELECT 'table ' || database_name || '.' || schema_name || '.' || table_name AS x FROM duckdb_tables()
UNION ALL SELECT 'view ' || database_name || '.' || schema_name || '.' || view_name FROM duckdb_views() WHERE NOT internal
UNION ALL SELECT 'schema ' || database_name || '.' || schema_name FROM duckdb_schemas()
UNION ALL SELECT 'sequence ' || database_name || '.' || schema_name || '.' || sequence_name FROM duckdb_sequences()
UNION ALL SELECT 'index ' || database_name || '.' || schema_name || '.' || index_name FROM duckdb_indexes()
UNION ALL SELECT 'type ' || database_name || '.' || schema_name || '.' || type_name FROM duckdb_types() WHERE NOT internal
UNION ALL SELECT 'variable ' || name FROM duckdb_variables()
UNION ALL SELECT 'prepared ' || name FROM duckdb_prepared_statements()
UNION ALL SELECT 'database ' || database_name FROM duckdb_databases())`

// listCatalog returns what catalogSQL lists of d, without the schemas
// and views of places, the tables whose views d holds.
func (d *duck) listCatalog(ctx context.Context, places []string) (string, error) {
	var s string
	if err := d.conn.QueryRowContext(ctx, catalogSQL).Scan(&s); err != nil {
		return "", fmt.Errorf("query: the catalog of DuckDB: %w", err)
	}
	ours := map[string]bool{}
	for _, t := range places {
		p := placeOf(t).out
		ours["schema "+database+"."+p] = true
		for _, v := range viewNames {
			ours["view "+database+"."+p+"."+v] = true
		}
	}
	lines := strings.Split(s, "\n")
	lines = slices.DeleteFunc(lines, func(l string) bool { return ours[l] })
	return strings.Join(lines, "\n"), nil
}

// reset drops what the statement that ran on d left (its result), seeds
// DuckDB's random numbers anew and reports whether d's catalog is then
// base and the views of its places: only then may another statement run
// on it.
func (d *duck) reset(ctx context.Context, base string) bool {
	if d.key == "" || base == "" {
		return false
	}
	var seed [8]byte
	rand.Read(seed[:])
	f := float64(binary.LittleEndian.Uint64(seed[:])>>11)/(1<<53)*2 - 1
	if _, err := d.conn.ExecContext(ctx, `DROP TABLE IF EXISTS temp.main.`+resultTable+`; SELECT setseed(`+strconv.FormatFloat(f, 'f', -1, 64)+`)`); err != nil {
		return false
	}
	now, err := d.listCatalog(ctx, d.places)
	return err == nil && now == base
}
