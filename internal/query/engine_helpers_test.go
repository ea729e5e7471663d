package query

import (
	"context"

	"github.com/meterstore/meterstore/series"
)

// The tests run a statement as the store does: Prepare, with the engine's
// table the default, then Query or Stream.

// queryOf runs sql on e and returns its rows, held.
func queryOf(ctx context.Context, e *Engine, sql string) (*Result, error) {
	return queryAt(ctx, e, sql, ReadOptions{})
}

// queryAt runs sql on e as opts says and returns its rows, held.
func queryAt(ctx context.Context, e *Engine, sql string, opts ReadOptions) (*Result, error) {
	st, err := e.Prepare(ctx, sql, PrepareOptions{Read: opts, Table: e.first()})
	if err != nil {
		return nil, err
	}
	return st.Query(ctx)
}

// streamOf runs sql on e and streams its rows to start and row.
func streamOf(ctx context.Context, e *Engine, sql string, start func(*Header) error, row func([]any) error) error {
	st, err := e.Prepare(ctx, sql, PrepareOptions{Table: e.first()})
	if err != nil {
		return err
	}
	return st.Stream(ctx, start, row)
}

// single returns an engine over the one table tab, whose tiers src reads.
func single(tab *series.Table, src Source, s Settings) (*Engine, error) {
	t, err := NewTable(tab, src)
	if err != nil {
		return nil, err
	}
	return deployment(s, t)
}

// deployment returns an engine over tables; the tests' statements take
// the first as their default.
func deployment(s Settings, tables ...*Table) (*Engine, error) {
	byName := map[string]*Table{}
	var names []string
	for _, t := range tables {
		byName[t.table.Name] = t
		names = append(names, t.table.Name)
	}
	return New(s, Tables{Names: names, Open: func(_ context.Context, name string) (*Table, error) { return byName[name], nil }})
}

// first returns the name of e's first table, the default of the tests'
// statements.
func (e *Engine) first() string { return e.tables.Names[0] }

// firstTable returns e's first table.
func (e *Engine) firstTable() *Table {
	t, err := e.tables.Open(context.Background(), e.first())
	if err != nil {
		panic(err)
	}
	return t
}

// open starts an in-memory DuckDB configured by s, spilling into a
// directory of its own in s.CacheDir, not locked down.
func open(ctx context.Context, s Settings) (*instance, error) {
	inst, err := start(ctx, s, s.Threads)
	if err != nil {
		return nil, err
	}
	spill, err := inst.spillInto(s.CacheDir)
	if err == nil && spill != "" {
		_, err = inst.conn.ExecContext(ctx, spill)
	}
	if err != nil {
		inst.close()
		return nil, err
	}
	return inst, nil
}
