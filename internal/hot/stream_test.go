package hot

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/series"
)

// streamFunc writes the batches of next to tab, as WriteEach does.
type streamFunc func(ctx context.Context, h *Tier, tab *series.Table, next func() ([]series.Reading, error), done func(series.Result, error) error) error

func writeEach(ctx context.Context, h *Tier, tab *series.Table, next func() ([]series.Reading, error), done func(series.Result, error) error) error {
	return h.WriteEach(ctx, tab, next, done)
}

// overlapping is WriteEach broken on purpose: each batch is written as
// soon as it is prepared, while the one before it is still being written,
// on a connection of its own.
func overlapping(ctx context.Context, h *Tier, tab *series.Table, next func() ([]series.Reading, error), done func(series.Result, error) error) error {
	type result struct {
		res series.Result
		err error
	}
	var wg sync.WaitGroup
	var results []*result
	for {
		rows, err := next()
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			break
		}
		r := &result{}
		results = append(results, r)
		b, err := h.prepareWrite(tab, rows, WriteOptions{})
		if err != nil {
			r.err = err
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.res, r.err = h.writePrepared(ctx, tab, b, nil)
		}()
	}
	wg.Wait()
	for _, r := range results {
		if err := done(r.res, r.err); err != nil {
			return err
		}
	}
	return nil
}

// TestWriteEachOrder: of two batches in flight, the later one's outcomes
// are decided against the earlier one's rows once they are committed,
// never before: they are the outcomes of writing the batches one by one,
// even when the earlier write is held up. Batch A writes meter 1 and
// version 2 of meter 2, batch B version 1 of meter 2, which must come out
// Shadowed. A is held up on a dictionary key of meter 1 that a plain
// client has inserted and not committed. The same run with a writer that
// lets B go ahead (overlapping) must get other outcomes, B Inserted and A
// Superseded, or the run would not tell the two apart.
func TestWriteEachOrder(t *testing.T) {
	type counts struct{ inserted, superseded, shadowed int }
	of := func(r series.Result) counts { return counts{r.Inserted, r.Superseded, r.Shadowed} }
	want := [2]counts{{inserted: 8}, {shadowed: 4}}
	if got := heldUp(t, writeEach); of(got[0]) != want[0] || of(got[1]) != want[1] {
		t.Errorf("WriteEach: A %+v, B %+v; want A %+v (written first), B %+v (shadowed by A's version 2)", got[0], got[1], want[0], want[1])
	}
	if got := heldUp(t, overlapping); of(got[0]) == want[0] && of(got[1]) == want[1] {
		t.Errorf("overlapping writes: A %+v, B %+v, as one by one: the test cannot tell them apart", got[0], got[1])
	}
}

// heldUp writes batches A and B of TestWriteEachOrder with stream, A held
// up until B is stored or a second has passed, and returns their results.
func heldUp(t *testing.T, stream streamFunc) [2]series.Result {
	t.Helper()
	h, pool := newTier(t, Options{})
	tab := lastgang("stream")
	declare(t, h, tab)
	ctx := context.Background()

	blocker, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(ctx)
	if _, err := blocker.Exec(ctx, `INSERT INTO meterstore.stream_series (bucket, malo_id, obis_code) VALUES ($1, $2, $3)`,
		day, malo(1), "1-1:1.29.0"); err != nil {
		t.Fatal(err)
	}
	batches := [][]series.Reading{append(slots(1, 1, 0, 1, 2, 3), slots(2, 2, 0, 1, 2, 3)...), slots(2, 1, 0, 1, 2, 3)}
	released := make(chan struct{})
	next := func() ([]series.Reading, error) {
		if len(batches) == 0 {
			return nil, nil
		}
		out := batches[0]
		batches = batches[1:]
		if len(batches) == 0 {
			// B is handed over once A waits for the blocker.
			if !waitUpTo(pool, `SELECT count(*) > 0 FROM pg_locks WHERE NOT granted`, 12000) {
				return nil, errors.New("batch A never waited for the blocker")
			}
			go func() {
				defer close(released)
				// Time for an overlapping writer to store B
				// (bounded); WriteEach stores nothing meanwhile.
				waitUpTo(pool, `SELECT count(*) > 0 FROM meterstore.stream`, 200)
				blocker.Rollback(ctx)
			}()
		}
		return out, nil
	}
	var got []series.Result
	err = stream(ctx, h, tab, next, func(res series.Result, err error) error {
		if err != nil {
			return err
		}
		got = append(got, res)
		return nil
	})
	<-released
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d results, want 2", len(got))
	}
	return [2]series.Result{got[0], got[1]}
}

// TestWriteEachFailed: a batch that fails leaves nothing the next one's
// outcomes depend on: its rows were never committed, and the next batch's
// transaction begins after its rollback.
func TestWriteEachFailed(t *testing.T) {
	h, _ := newTier(t, Options{})
	tab := lastgang("stream")
	declare(t, h, tab)
	ctx := context.Background()
	mustWrite(t, h, tab, slots(3, 1, 0))
	restated := slots(3, 1, 0)
	restated[0].Value++
	batches := [][]series.Reading{append(slots(2, 2, 0, 1, 2, 3), restated...), slots(2, 1, 0, 1, 2, 3)}
	var errs []error
	var got []series.Result
	err := h.WriteEach(ctx, tab, func() ([]series.Reading, error) {
		if len(batches) == 0 {
			return nil, nil
		}
		out := batches[0]
		batches = batches[1:]
		return out, nil
	}, func(res series.Result, err error) error {
		got, errs = append(got, res), append(errs, err)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) != 2 {
		t.Fatalf("%d results, want 2", len(errs))
	}
	wantError(t, errs[0], series.IntegrityViolation, 4)
	if errs[1] != nil || got[1].Inserted != 4 {
		t.Fatalf("batch after the failed one: %+v, %v; want 4 inserted", got[1], errs[1])
	}
	if n := len(scanAll(t, h, tab)); n != 5 {
		t.Fatalf("%d readings stored, want 5", n)
	}
}

// waitUpTo polls cond at most n times, 5 ms apart, and reports whether it
// held.
func waitUpTo(pool *pgxpool.Pool, cond string, n int) bool {
	for range n {
		var ok bool
		if err := pool.QueryRow(context.Background(), cond).Scan(&ok); err == nil && ok {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}
