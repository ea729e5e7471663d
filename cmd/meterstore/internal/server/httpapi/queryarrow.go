package httpapi

// The Arrow IPC stream of a query's answer, its batches built by
// arrowrows (which says how DuckDB's types map to Arrow's).

import (
	"io"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/meterstore/meterstore/internal/arrowrows"
)

// arrowAnswer writes rows as an Arrow IPC stream, a record batch at a
// time.
type arrowAnswer struct {
	w     *ipc.Writer
	b     *arrowrows.Builder
	flush func() error
}

// newArrowAnswer returns the Arrow writer of an answer with columns of
// the DuckDB types types, with m in the schema's metadata; flush sends what has been written to the client.
func newArrowAnswer(w io.Writer, columns, types []string, m arrowrows.Meta, flush func() error) *arrowAnswer {
	b := arrowrows.NewBuilder(columns, types, m)
	return &arrowAnswer{b: b, flush: flush,
		w: ipc.NewWriter(w, ipc.WithSchema(b.Schema()), ipc.WithAllocator(memory.NewGoAllocator()))}
}

func (a *arrowAnswer) row(vals []any) error {
	full, err := a.b.Append(vals)
	if err != nil {
		return renderError{err}
	}
	if full {
		return a.send()
	}
	return nil
}

// send writes the rows held as a record batch and flushes it.
func (a *arrowAnswer) send() error {
	rec := a.b.NewBatch()
	defer rec.Release()
	if err := a.w.Write(rec); err != nil {
		return err
	}
	return a.flush()
}

// end sends the rows held and the end-of-stream marker.
func (a *arrowAnswer) end() error {
	defer a.b.Release()
	if a.b.Len() > 0 {
		if err := a.send(); err != nil {
			return err
		}
	}
	if err := a.w.Close(); err != nil {
		return err
	}
	return a.flush()
}

// cut: a stream without its end-of-stream marker, on a dropped
// connection, is one no reader takes for whole.
func (a *arrowAnswer) cut(string, string) bool {
	a.b.Release()
	return true
}
