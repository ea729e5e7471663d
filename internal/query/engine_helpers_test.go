package query

import "context"

// The tests run a statement as the store does: Prepare, with the engine's
// table the default, then Query or Stream.

// queryOf runs sql on e and returns its rows, held.
func queryOf(ctx context.Context, e *Engine, sql string) (*Result, error) {
	return queryAt(ctx, e, sql, ReadOptions{})
}

// queryAt runs sql on e as opts says and returns its rows, held.
func queryAt(ctx context.Context, e *Engine, sql string, opts ReadOptions) (*Result, error) {
	st, err := e.Prepare(ctx, sql, PrepareOptions{Read: opts, Default: true})
	if err != nil {
		return nil, err
	}
	return st.Query(ctx)
}

// streamOf runs sql on e and streams its rows to start and row.
func streamOf(ctx context.Context, e *Engine, sql string, start func(*Header) error, row func([]any) error) error {
	st, err := e.Prepare(ctx, sql, PrepareOptions{Default: true})
	if err != nil {
		return err
	}
	return st.Stream(ctx, start, row)
}
