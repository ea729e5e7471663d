package cold

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// TestBytesPerReading archives a month of quarter-hour load profiles of 200
// market locations, in the key order the hot tier scans them in, with
// values that behave like metered energy (three decimals, a daily shape,
// noise), and reports what a reading costs on disk.
func TestBytesPerReading(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	tab.Columns = nil
	h := e.ensure(t, tab)

	const locations = 200
	slots := int(feb2026.Sub(jan2026) / (15 * time.Minute))
	rng := rand.New(rand.NewPCG(1, 2))
	counts := map[int64]float64{}
	rows := func(yield func(series.Reading, error) bool) {
		for i := range locations {
			id := malo(i)
			base := 50 + rng.Int64N(400) // Wh per quarter hour
			for k := range slots {
				from := jan2026.Add(time.Duration(k) * 15 * time.Minute)
				hour := from.Hour()
				shape := int64(1 + (hour+18)%24/6)
				wh := base*shape + rng.Int64N(base/2+1)
				counts[wh]++
				r := series.Reading{
					MaLo: id, OBIS: "1-1:1.29.0", From: from, To: from.Add(15 * time.Minute),
					Value: series.Decimal(wh * 1000), // kWh with three decimals
					Unit:  metering.KilowattHour, Quality: metering.TrueValue, Resolution: metering.QuarterHour,
					Version: 20260203061500, VersionScope: "9900000000003:2026-01",
					RecordedAt:   time.Date(2026, 2, 3, 6, 15, 0, 0, time.UTC),
					BalancingDay: cal.BalancingDay(from, metering.Electricity),
				}
				if !yield(r, nil) {
					return
				}
			}
		}
	}
	c, err := e.tier.Archive(t.Context(), h, feb2026, jan2026, feb2026, rows)
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.tier.Storage(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(locations * slots)
	if s.Readings != n || s.Files != c.Files || s.Bytes != c.Bytes {
		t.Fatalf("storage %+v, commit %+v, want %d readings", s, c, n)
	}
	var onDisk int64
	for _, f := range e.files(t, ".parquet") {
		fi, err := os.Stat(filepath.Join(e.dir, f))
		if err != nil {
			t.Fatal(err)
		}
		onDisk += fi.Size()
	}
	if onDisk != s.Bytes {
		t.Fatalf("manifests record %d bytes, the files have %d", s.Bytes, onDisk)
	}
	bpr, err := e.tier.BytesPerReading(t.Context(), h)
	if err != nil || bpr != s.BytesPerReading() {
		t.Fatalf("bytes per reading %v, %v", bpr, err)
	}
	t.Logf("%d readings in %d files, %d bytes: %.2f bytes per reading", n, s.Files, s.Bytes, bpr)
	checkFootprint(t, e, h, s, counts)
	// PostgreSQL needs about 100 bytes per row of this table; the point of
	// the tier is to need a small fraction of that.
	if bpr > 8 {
		t.Fatalf("%.2f bytes per reading, want at most 8", bpr)
	}
}

// checkFootprint compares the tier's footprint of h with storage s and
// with the entropy of the values written, counted in counts.
func checkFootprint(t *testing.T, e *env, h *Table, s Storage, counts map[int64]float64) {
	t.Helper()
	fp, err := e.tier.Footprint(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	if fp.Files != s.Files || fp.Bytes != s.Bytes || fp.Readings != s.Readings {
		t.Fatalf("footprint %d files, %d bytes, %d readings; storage %+v", fp.Files, fp.Bytes, fp.Readings, s)
	}
	var sum int64
	for _, c := range fp.Columns {
		if c.Bytes <= 0 {
			t.Errorf("column %s: %d bytes", c.Name, c.Bytes)
		}
		sum += c.Bytes
	}
	if len(fp.Columns) != len(Schema(&h.decl).Fields()) || sum >= fp.Bytes || fp.OverheadBytes() != fp.Bytes-sum {
		t.Fatalf("%d columns of %d bytes in %d bytes of files", len(fp.Columns), sum, fp.Bytes)
	}
	want := 0.0
	for _, n := range counts {
		p := n / float64(s.Readings)
		want -= p * math.Log2(p)
	}
	if fp.ValueDistinct != len(counts) || math.Abs(fp.ValueEntropyBits-want) > 1e-9 {
		t.Fatalf("value column: %d distinct, %.6f bits; written %d distinct, %.6f bits", fp.ValueDistinct, fp.ValueEntropyBits, len(counts), want)
	}
	t.Logf("value entropy %.3f B/reading (%d distinct), files %.3f B/reading: %.2fx; bloom filters %.3f B/reading",
		fp.ValueEntropyBytes(), fp.ValueDistinct, fp.BytesPerReading(), fp.VsEntropy(), float64(fp.BloomBytes)/float64(fp.Readings))
	for _, c := range fp.Columns {
		t.Logf("  %-14s %.3f B/reading", c.Name, fp.ColumnBytesPerReading(c))
	}
}
