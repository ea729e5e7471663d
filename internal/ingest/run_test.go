package ingest

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meterstore/meterstore/series"
)

// lineReader hands out one line per Read and counts the lines handed out.
type lineReader struct {
	lines []string
	read  atomic.Int64
}

func (r *lineReader) Read(p []byte) (int, error) {
	i := int(r.read.Load())
	if i == len(r.lines) {
		return 0, io.EOF
	}
	if len(p) < len(r.lines[i]) {
		return 0, io.ErrShortBuffer
	}
	r.read.Add(1)
	return copy(p, r.lines[i]), nil
}

// TestRunDecodesAhead: while a batch is written, the next one is decoded
// (the write waits, bounded, for its lines to be read), but not the one
// after it, and the batch being written is left as it was handed over.
// Batches are written in order, each once.
func TestRunDecodesAhead(t *testing.T) {
	const per, batches = 5, 6
	r := &lineReader{lines: []string{"malo_id,from,value,unit,quality,version\n"}}
	for i := range per * batches {
		r.lines = append(r.lines, fmt.Sprintf("50000000005,%s,%d,kWh,220,1\n", time.Date(2026, 3, 1, 0, 15*i, 0, 0, time.UTC).Format(time.RFC3339), i))
	}
	d, err := NewDecoder(r, CSV, table)
	if err != nil {
		t.Fatal(err)
	}
	k := 0
	write := func(_ context.Context, rows []series.Reading) ([]series.Status, int, error) {
		handed := slices.Clone(rows)
		for i, row := range rows {
			if want := series.Decimal((k*per + i) * 1_000_000); row.Value != want {
				return nil, 0, fmt.Errorf("batch %d row %d: value %d, want %d (out of order)", k, i, row.Value, want)
			}
		}
		// Lines read: the header, this batch and, if there is one, the next.
		want := int64(1 + per*min(k+2, batches))
		for range 2000 {
			if r.read.Load() >= want {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if got := r.read.Load(); got != want {
			return nil, 0, fmt.Errorf("batch %d being written: %d lines read, want %d", k, got, want)
		}
		if !slices.EqualFunc(handed, rows, func(a, b series.Reading) bool { return a.Value == b.Value && a.From.Equal(b.From) }) {
			return nil, 0, fmt.Errorf("batch %d changed while it was written", k)
		}
		k++
		st := make([]series.Status, len(rows))
		for i := range st {
			st[i] = series.Inserted
		}
		return st, 0, nil
	}
	sum, err := Run(t.Context(), d, write, Options{BatchRows: per})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Batches != batches || sum.Inserted != per*batches || k != batches {
		t.Fatalf("summary %+v after %d writes", sum, k)
	}
}

// TestRunStopsDecoding: a batch that cannot be written ends the run, and
// Run returns only once the decoding goroutine has stopped reading.
func TestRunStopsDecoding(t *testing.T) {
	var in strings.Builder
	in.WriteString("malo_id,from,value,unit,quality,version\n")
	for i := range 100 {
		in.WriteString("50000000005," + time.Date(2026, 3, 1, 0, 15*i, 0, 0, time.UTC).Format(time.RFC3339) + ",1,kWh,220,1\n")
	}
	r := &lineReader{lines: strings.SplitAfter(in.String(), "\n")}
	r.lines = r.lines[:len(r.lines)-1] // the empty string after the last newline
	d, err := NewDecoder(r, CSV, table)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(t.Context(), d, func(context.Context, []series.Reading) ([]series.Status, int, error) {
		return nil, 0, fmt.Errorf("refused")
	}, Options{BatchRows: 10})
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("error %v", err)
	}
	read := r.read.Load()
	time.Sleep(20 * time.Millisecond)
	if got := r.read.Load(); got != read || got > 1+2*10 {
		t.Fatalf("%d lines read when Run returned, %d after: want no more than two batches, and none after", read, got)
	}
}
