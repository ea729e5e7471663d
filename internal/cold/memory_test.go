package cold

import (
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/meterstore/meterstore/series"
)

// heapPeak samples the in-use heap until stop is called, which returns the
// largest sample.
func heapPeak() (stop func() uint64) {
	var (
		wg   sync.WaitGroup
		peak uint64
		done = make(chan struct{})
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak
	}
}

// TestArchiveMemoryIsBounded streams two million readings into one
// archival and back out of a scan. Held at once, the readings take about a
// gigabyte as Go values and a few hundred megabytes as Arrow columns; the
// heap must stay far below either, bounded by the batch and the row group
// instead. This measures memory, not time.
func TestArchiveMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("two million readings")
	}
	const (
		locations = 1000
		slots     = 2000 // quarter hours: three weeks
		n         = locations * slots
		bound     = 80 << 20 // a quarter of the Arrow columns, a fifth of the Go values
	)
	e := newEnv(t, Options{BatchRows: 4096, RowGroupRows: 64 << 10, RowGroupBytes: 8 << 20, TargetFileSize: 32 << 20})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	ids := make([]string, locations)
	for i := range ids {
		ids[i] = malo(i)
	}
	// One reading per slot, copied for every location: the readings are
	// made as they are consumed and never held.
	slot := quarterHours(0, jan2026, slots)
	rows := func(yield func(series.Reading, error) bool) {
		for i := range locations {
			for k := range slots {
				r := slot[k]
				r.MaLo = ids[i]
				if !yield(r, nil) {
					return
				}
			}
		}
	}

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	stop := heapPeak()
	c, err := e.tier.Archive(t.Context(), h, feb2026, jan2026, feb2026, rows)
	archivePeak := stop()
	if err != nil {
		t.Fatal(err)
	}
	if c.Rows != n {
		t.Fatalf("archived %d readings, want %d", c.Rows, n)
	}

	runtime.GC()
	stop = heapPeak()
	var scanned int64
	var sum series.Decimal
	for r, err := range e.tier.Scan(t.Context(), h, series.Range{}) {
		if err != nil {
			t.Fatal(err)
		}
		scanned++
		sum += r.Value
	}
	scanPeak := stop()
	if scanned != n {
		t.Fatalf("scanned %d readings, want %d", scanned, n)
	}
	var want series.Decimal
	for _, r := range slot {
		want += r.Value * locations
	}
	if sum != want {
		t.Fatalf("sum of values %s, want %s", sum, want)
	}

	goBytes := uint64(n) * uint64(unsafe.Sizeof(series.Reading{}))
	t.Logf("%d readings (%d MiB as Go values without their strings and maps) in %d files of %d MiB; heap peak above the baseline: archive %d MiB, scan %d MiB",
		n, goBytes>>20, c.Files, c.Bytes>>20, (archivePeak-base)>>20, (scanPeak-base)>>20)
	for what, peak := range map[string]uint64{"archive": archivePeak, "scan": scanPeak} {
		if peak > base && peak-base > bound {
			t.Errorf("%s: heap peak %d MiB above the baseline, want at most %d MiB", what, (peak-base)>>20, bound>>20)
		}
	}
}
