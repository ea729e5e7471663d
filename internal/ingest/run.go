package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/meterstore/meterstore/internal/ahead"
	"github.com/meterstore/meterstore/series"
)

// DefaultBatchRows is the number of readings written per atomic batch.
const DefaultBatchRows = 10_000

// MaxBatchRows bounds the size of a batch: a batch is held in memory, its
// records and their readings, and written in one transaction, so a size
// much past this is an out of memory error or a transaction that holds
// its locks for minutes, never a faster ingest.
const MaxBatchRows = 1_000_000

// A WriteFunc writes one batch atomically and reports per row whether it
// was inserted or already present, and how many rows went to the cold tier.
type WriteFunc func(ctx context.Context, rows []series.Reading) (status []series.Status, late int, err error)

// Options configure Run.
type Options struct {
	// BatchRows is the size of an atomic batch, at most MaxBatchRows; zero
	// means DefaultBatchRows.
	BatchRows int
	// Report, if set, receives a CSV line "line,status" per reading written.
	Report io.Writer
	// Progress, if set, is called after every batch.
	Progress func(Summary)
}

// A Summary counts what Run did.
type Summary struct {
	Records, Inserted, Present, Late, Batches int
	// Superseded and Shadowed count readings stored beside other versions
	// of their merge key: winning over lower ones, or losing to a higher
	// one (series.Status). Refused counts the readings the store named
	// when it refused a batch.
	Superseded, Shadowed, Refused int
	// Through is the last line of the last batch written: a rerun after a
	// failure may start after it, or from the top, since redelivering a
	// written reading is a no-op.
	Through int
}

// A BatchError is a batch that was not written, and why, by line.
type BatchError struct {
	FirstLine, LastLine int
	// Lines are the offending lines with their reasons, in order; empty
	// when the batch failed as a whole.
	Lines []*LineError
	Err   error
}

// Error names the batch's lines and the first offending ones.
func (e *BatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "batch of lines %d-%d not written", e.FirstLine, e.LastLine)
	for i, l := range e.Lines {
		if i == 10 {
			fmt.Fprintf(&b, "\n  and %d more lines", len(e.Lines)-i)
			break
		}
		fmt.Fprintf(&b, "\n  %v", l)
	}
	if e.Err != nil && len(e.Lines) == 0 {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *BatchError) Unwrap() error { return e.Err }

// A StreamFunc writes, in order, the batches next returns until it
// returns no rows, each atomically as a WriteFunc writes one, and passes
// each batch's outcome to done, in order; it returns the first error of
// next or of done. It may call next for the following batch while a batch
// is written, but calls it again only once done has returned for the
// batch two back, whose rows next may then reuse; never concurrently with
// itself, nor after it has returned. Store.WriteEach is one.
type StreamFunc func(ctx context.Context, next func() ([]series.Reading, error), done func(status []series.Status, late int, err error) error) error

// Stream returns the StreamFunc that writes each batch with write, while
// the next batch is decoded.
func Stream(write WriteFunc) StreamFunc {
	return func(ctx context.Context, next func() ([]series.Reading, error), done func([]series.Status, int, error) error) error {
		return ahead.Run(ctx, func() (func() error, error) {
			rows, err := next()
			if err != nil || len(rows) == 0 {
				return nil, err
			}
			return func() error { return done(write(ctx, rows)) }, nil
		})
	}
}

// Run decodes d and writes its readings in atomic batches until the end or
// the first batch that cannot be written, which writes nothing and comes
// back as a *BatchError naming its lines. Batches before it stay written.
//
// The next batch is decoded while the one before it is written, on a
// goroutine of its own: two batches at most are held, and they are written
// one after another, in order, each after the previous write returned.
func Run(ctx context.Context, d *Decoder, write WriteFunc, opts Options) (Summary, error) {
	return RunStream(ctx, d, Stream(write), opts)
}

// RunStream is Run with the batches written by stream, which may prepare
// a batch's write while the one before it is written.
func RunStream(ctx context.Context, d *Decoder, stream StreamFunc, opts Options) (Summary, error) {
	n := opts.BatchRows
	switch {
	case n == 0:
		n = DefaultBatchRows
	case n < 0 || n > MaxBatchRows:
		return Summary{}, fmt.Errorf("ingest: a batch of %d rows: want 1 to %d", n, MaxBatchRows)
	}
	var sum Summary
	bufs := takeBatches(n)
	// stream has returned, and with it every call of next: the buffers go
	// back to the pool only once no one fills them.
	defer giveBatches(bufs)
	// The k-th batch next decodes fills bufs[k%2]; stream calls next again
	// only once the batch two back is done, and done for the k-th batch
	// finds its lines there.
	decodedN, doneN, ended := 0, 0, false
	next := func() ([]series.Reading, error) {
		if ended {
			return nil, nil
		}
		b := &bufs[decodedN%2]
		decodedN++
		ended = decodeBatch(d, n, b)
		switch {
		case b.err != nil:
			return nil, b.err
		case len(b.bad) > 0:
			return nil, &BatchError{FirstLine: b.lines[0], LastLine: b.lines[len(b.lines)-1], Lines: b.bad, Err: errors.New("records could not be decoded")}
		}
		return b.rows, nil
	}
	done := func(status []series.Status, late int, err error) error {
		b := &bufs[doneN%2]
		doneN++
		lines := b.lines
		first, last := lines[0], lines[len(lines)-1]
		if err != nil {
			for _, s := range status {
				if s == series.Refused {
					sum.Refused++
				}
			}
			return batchError(err, lines, first, last)
		}
		sum.Batches++
		sum.Records += len(b.rows)
		sum.Late += late
		sum.Through = last
		for i, s := range status {
			switch s {
			case series.Inserted:
				sum.Inserted++
			case series.Present:
				sum.Present++
			case series.Superseded:
				sum.Superseded++
			case series.Shadowed:
				sum.Shadowed++
			}
			if opts.Report != nil {
				if _, err := fmt.Fprintf(opts.Report, "%d,%s\n", lines[i], s); err != nil {
					return fmt.Errorf("ingest: report: %w", err)
				}
			}
		}
		if opts.Progress != nil {
			opts.Progress(sum)
		}
		return nil
	}
	if err := stream(ctx, next, done); err != nil {
		return sum, err
	}
	return sum, ctx.Err()
}

// A decoded batch is what decodeBatch read for one write: the line of
// each record, the readings of those that decoded, and the lines that did
// not; or the decoder's error, which ends the run.
type decoded struct {
	lines []int
	rows  []series.Reading
	bad   []*LineError
	err   error
}

// decodeBatch decodes the next batch of up to n records from d into b,
// and reports whether d has ended, or failed, with it.
func decodeBatch(d *Decoder, n int, b *decoded) (end bool) {
	if b.lines == nil {
		// The batches grow as they are read: a large batch size must
		// not cost its memory up front for a small delivery.
		b.lines = make([]int, 0, min(n, DefaultBatchRows))
		b.rows = make([]series.Reading, 0, min(n, DefaultBatchRows))
	}
	b.lines, b.rows, b.bad, b.err = b.lines[:0], b.rows[:0], nil, nil
	for len(b.lines) < n {
		rec, err := d.Next()
		if err == nil {
			b.lines = append(b.lines, rec.Line)
			b.rows = append(b.rows, rec.Reading)
			continue
		}
		if err == io.EOF {
			return true
		}
		if le, ok := errors.AsType[*LineError](err); ok {
			b.bad = append(b.bad, le)
			b.lines = append(b.lines, rec.Line)
			continue
		}
		b.err = err
		return true
	}
	return false
}

// batchError names the lines of the rows a refused batch names, and of
// the rows their reasons refer to.
func batchError(err error, lines []int, first, last int) error {
	be := &BatchError{FirstLine: first, LastLine: last, Err: err}
	var he *series.Error
	if errors.As(err, &he) {
		for _, p := range he.Problems {
			if p.Row >= 0 && p.Row < len(lines) {
				be.Lines = append(be.Lines, &LineError{Line: lines[p.Row], Err: errors.New(p.RenameRow(func(i int) (string, bool) {
					if i < 0 || i >= len(lines) {
						return "", false
					}
					return "line " + strconv.Itoa(lines[i]), true
				}))})
			}
		}
	}
	return be
}
