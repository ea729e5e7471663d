package ingest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meterstore/meterstore/series"
)

// TestRunBuffersNotShared: runs one after another and side by side reuse
// batch buffers, yet every write sees exactly its own delivery's rows, in
// order and unchanged while it writes; a run that stops early (a refused
// write, a bad line in the middle) hands its buffers back only once its
// decoding has stopped, and writes nothing of the bad line's batch.
func TestRunBuffersNotShared(t *testing.T) {
	const per, runners, runs = 4, 6, 30
	delivery := func(tag, rows, badAt int) string {
		var b strings.Builder
		b.WriteString("malo_id,from,value,unit,quality,version\n")
		for i := range rows {
			value := fmt.Sprint(i)
			if i == badAt {
				value = "x"
			}
			fmt.Fprintf(&b, "50000000005,%s,%s,kWh,220,%d\n", time.Date(2026, 3, 1, 0, 15*i, 0, 0, time.UTC).Format(time.RFC3339), value, tag)
		}
		return b.String()
	}
	var wg sync.WaitGroup
	errs := make(chan error, runners*runs)
	for g := range runners {
		wg.Go(func() {
			for k := range runs {
				tag := g*1000 + k + 1
				rows := 3 + (g*7+k*5)%23
				badAt, refuseAt := -1, -1
				switch k % 3 {
				case 1:
					badAt = rows / 2
				case 2:
					refuseAt = (rows / per) / 2
				}
				d, err := NewDecoder(strings.NewReader(delivery(tag, rows, badAt)), CSV, table)
				if err != nil {
					errs <- err
					return
				}
				written, batch := 0, 0
				write := func(_ context.Context, got []series.Reading) ([]series.Status, int, error) {
					handed := slices.Clone(got)
					runtime.Gosched() // let the other runs and this run's decoder go on
					for i, r := range got {
						if r.Version != uint64(tag) || r.Value != series.Decimal((written+i)*1_000_000) {
							return nil, 0, fmt.Errorf("run %d batch %d row %d: version %d value %d, want version %d value %d",
								tag, batch, i, r.Version, r.Value, tag, (written+i)*1_000_000)
						}
					}
					if !slices.EqualFunc(handed, got, func(a, b series.Reading) bool { return a.Value == b.Value && a.Version == b.Version }) {
						return nil, 0, fmt.Errorf("run %d batch %d changed while it was written", tag, batch)
					}
					if batch == refuseAt {
						return nil, 0, errors.New("refused")
					}
					if badAt >= 0 && written+len(got) > badAt {
						return nil, 0, fmt.Errorf("run %d: the batch holding the bad line %d was written", tag, badAt+2)
					}
					batch++
					written += len(got)
					return make([]series.Status, len(got)), 0, nil
				}
				_, err = Run(context.Background(), d, write, Options{BatchRows: per})
				var be *BatchError
				switch {
				case badAt < 0 && refuseAt < 0 && err != nil:
					errs <- fmt.Errorf("run %d: %w", tag, err)
				case (badAt >= 0 || refuseAt >= 0) && !errors.As(err, &be):
					errs <- fmt.Errorf("run %d (bad line at %d, refused batch %d): %v, want a batch error", tag, badAt, refuseAt, err)
				case badAt < 0 && refuseAt < 0 && written != rows:
					errs <- fmt.Errorf("run %d: %d rows written, want %d", tag, written, rows)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
