package store

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/meterstore/meterstore/internal/metrics"
	"github.com/meterstore/meterstore/internal/metrics/metricstest"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// streamFixture returns a store whose tables are tabs (power alone if
// nil) and whose power table holds days 0 to 4 with W at day 3.
func streamFixture(t *testing.T, tabs []Table) (*Store, writeMetrics) {
	t.Helper()
	ctx := t.Context()
	mp, reader := metricstest.New(t)
	s := newEnv(t).open(t, Options{Meters: mp, Tables: tabs})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(5)); err != nil {
		t.Fatal(err)
	}
	var base []Reading
	for d := range 5 {
		for i := range 4 {
			base = append(base, qh(i, d, 0, "A", 1, int64(10*d+i)))
		}
	}
	mustWrite(t, s, base)
	if out, err := s.Archive(ctx, "power", dayN(5)); err != nil || !out.Watermark.Equal(dayN(3)) {
		t.Fatalf("archive: %+v, %v", out, err)
	}
	return s, writeMetrics{reader}
}

// meters returns the readings f gives for meters 0 to 3.
func meters(f func(i int) []Reading) []Reading {
	var b []Reading
	for i := range 4 {
		b = append(b, f(i)...)
	}
	return b
}

// TestWriteEachLikeWrite writes the same delivery to two stores, batch by
// batch with WriteWith and as one stream with WriteEach that goes on past
// a refused batch: each batch's result (every row's status, the counts,
// the late rows, the substitutes' versions) and error, the metrics and
// the stored versions are the same. The delivery has new readings,
// corrections, lower versions delivered late (shadowed), redeliveries
// (present), a late correction below W beside hot rows, a restated value
// (refused), and a day without a partition followed by its corrections;
// and, as substitute values with a source, substitutes over stored
// readings and over none, on a day without a partition, and below W
// (refused).
func TestWriteEachLikeWrite(t *testing.T) {
	sub := func(i, d, slot int, value int64) Reading {
		r := qh(i, d, slot, "A", 0, value)
		r.Quality = metering.Substitute
		return r
	}
	withColumns := power()
	withColumns.Columns = append(withColumns.Columns, series.ProvenanceColumns()...)
	withColumns.Columns = append(withColumns.Columns, series.Column{Name: ColumnSubstitutedBy})
	for _, c := range []struct {
		name    string
		tabs    []Table
		opts    WriteOptions
		batches [][]Reading
		late    int64
	}{
		{"versions", nil, WriteOptions{}, [][]Reading{
			meters(func(i int) []Reading { return []Reading{qh(i, 4, 1, "A", 1, 1), qh(i, 4, 2, "B", 1, 2)} }),
			meters(func(i int) []Reading {
				return []Reading{qh(i, 4, 1, "A", 3, 30), qh(i, 4, 1, "A", 2, 20), qh(i, 4, 2, "B", 1, 2), qh(i, 3, 0, "A", 1, 30+int64(i))}
			}),
			// Day 1 lies below W: a late correction to the cold tier.
			meters(func(i int) []Reading { return []Reading{qh(i, 1, 0, "A", 2, 7), qh(i, 4, 3, "A", 1, 3)} }),
			// Meter 2's reading restates a stored value: refused.
			{qh(5, 4, 5, "A", 1, 5), qh(2, 4, 1, "A", 3, 31)},
			// Day 6 has no partition yet: the write creates it.
			meters(func(i int) []Reading { return []Reading{qh(i, 6, 0, "A", 1, 6), qh(i, 6, 1, "B", 1, 6)} }),
			meters(func(i int) []Reading { return []Reading{qh(i, 6, 0, "A", 2, 60), qh(i, 4, 1, "A", 3, 30)} }),
			meters(func(i int) []Reading { return []Reading{qh(i, 4, 4, "A", 1, 4)} }),
		}, 4},
		{"substitutes", []Table{withColumns}, WriteOptions{Substitute: true, By: "9900000000012", Source: Source{Kind: series.SourceCSV, Ref: "day.csv"}}, [][]Reading{
			meters(func(i int) []Reading { return []Reading{sub(i, 4, 0, 1), sub(i, 4, 7, 2)} }),
			meters(func(i int) []Reading { return []Reading{sub(i, 4, 0, 3), sub(i, 7, 0, 4)} }),
			{sub(1, 4, 9, 5), sub(1, 1, 0, 6)}, // below W: refused
			meters(func(i int) []Reading { return []Reading{sub(i, 3, 0, 7)} }),
		}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			one, oneMetrics := streamFixture(t, c.tabs)
			each, eachMetrics := streamFixture(t, c.tabs)
			type outcome struct {
				res WriteResult
				err string
			}
			var want []outcome
			for _, b := range c.batches {
				res, err := one.WriteWith(ctx, "power", b, c.opts)
				want = append(want, outcome{res, fmt.Sprint(err)})
			}
			var got []outcome
			k := 0
			err := each.WriteEach(ctx, "power", func() ([]Reading, error) {
				if k == len(c.batches) {
					return nil, nil
				}
				k++
				return c.batches[k-1], nil
			}, func(res WriteResult, err error) error {
				got = append(got, outcome{res, fmt.Sprint(err)})
				return nil
			}, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d results, want %d", len(got), len(want))
			}
			refused := 0
			for k := range want {
				if !reflect.DeepEqual(got[k], want[k]) {
					t.Errorf("batch %d: stream %+v, batch by batch %+v", k, got[k], want[k])
				}
				if want[k].err != "<nil>" {
					refused++
				}
			}
			// The fixture reaches every outcome, and the cold tier.
			for _, o := range []string{"inserted", "present", "superseded", "shadowed", "refused"} {
				g, w := eachMetrics.outcome(t, o), oneMetrics.outcome(t, o)
				if g != w {
					t.Errorf("meterstore.write.outcomes{outcome=%s}: stream %d, batch by batch %d", o, g, w)
				}
				if w == 0 && (c.name == "versions" || o == "inserted" || o == "superseded" || o == "refused") {
					t.Errorf("the fixture has no %s reading", o)
				}
			}
			if refused != 1 {
				t.Errorf("%d batches refused, want 1", refused)
			}
			if g, w := eachMetrics.value(t, "meterstore.write.late_corrections"), oneMetrics.value(t, "meterstore.write.late_corrections"); g != w || g != c.late {
				t.Errorf("late corrections: stream %d, batch by batch %d, want %d", g, w, c.late)
			}
			versions := `SELECT malo_id, obis_code, "from", channel, version, value, quality FROM readings_versions ORDER BY ALL`
			if c.tabs != nil {
				versions = `SELECT malo_id, obis_code, "from", channel, version, value, quality, substituted_by, source_kind, source_ref FROM readings_versions ORDER BY ALL`
			}
			if g, w := mustQuery(t, each, versions).Rows, mustQuery(t, one, versions).Rows; !reflect.DeepEqual(g, w) {
				t.Errorf("stored versions differ:\nstream %v\nbatch by batch %v", g, w)
			}
		})
	}
}

// TestWriteEachStopsAtFailedBatch: a stream whose third batch restates a
// stored value stops there with the error Write gives, naming the row;
// the batches before it stay written, nothing of it is, and nothing of
// the batch after it, which was handed over meanwhile.
func TestWriteEachStopsAtFailedBatch(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	if err := s.CreatePartitions(ctx, dayN(0), dayN(2)); err != nil {
		t.Fatal(err)
	}
	batches := [][]Reading{
		{qh(1, 0, 0, "A", 1, 10), qh(2, 0, 0, "A", 1, 10)},
		{qh(1, 0, 1, "A", 1, 11), qh(2, 0, 1, "A", 1, 11)},
		// Row 1 restates meter 1's first reading under its version.
		{qh(3, 0, 0, "A", 1, 12), qh(1, 0, 0, "A", 1, 99)},
		{qh(4, 0, 0, "A", 1, 13)},
	}
	k, calls := 0, 0
	var results []WriteResult
	err := s.WriteEach(ctx, "power", func() ([]Reading, error) {
		calls++
		if k == len(batches) {
			return nil, nil
		}
		k++
		return batches[k-1], nil
	}, func(res WriteResult, err error) error {
		results = append(results, res)
		return err
	}, WriteOptions{})
	var e *series.Error
	if !errors.As(err, &e) || e.Kind != series.IntegrityViolation || len(e.Problems) != 1 || e.Problems[0].Row != 1 {
		t.Fatalf("WriteEach: %v, want the restatement of row 1", err)
	}
	if len(results) != 3 || results[2].Refused != 1 || results[2].Status[1] != series.Refused || results[2].Status[0] != 0 {
		t.Fatalf("results %+v", results)
	}
	stored := map[string]bool{}
	for _, r := range mustQuery(t, s, `SELECT malo_id, "from" FROM readings_versions`).Rows {
		stored[fmt.Sprint(r[0], " ", r[1].(time.Time).UTC())] = true
	}
	want := map[string]bool{}
	for _, r := range append(batches[0], batches[1]...) {
		want[fmt.Sprint(r.MaLo, " ", r.From.UTC())] = true
	}
	if !reflect.DeepEqual(stored, want) {
		t.Fatalf("stored %v, want the first two batches' readings %v", stored, want)
	}
}

// TestWriteEachOverlaps: the next batch is asked for while a batch is
// written, not after: done of the first batch waits for the call for the
// second, which a stream that asked only between writes would never make.
func TestWriteEachOverlaps(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	if err := s.CreatePartitions(ctx, dayN(0), dayN(2)); err != nil {
		t.Fatal(err)
	}
	second := make(chan struct{})
	k, written := 0, 0
	err := s.WriteEach(ctx, "power", func() ([]Reading, error) {
		k++
		switch k {
		case 1:
			return []Reading{qh(1, 0, 0, "A", 1, 1)}, nil
		case 2:
			close(second)
			return []Reading{qh(1, 0, 1, "A", 1, 1)}, nil
		}
		return nil, nil
	}, func(res WriteResult, err error) error {
		if err != nil {
			return err
		}
		if written++; written == 1 {
			select {
			case <-second:
			case <-time.After(time.Minute):
				return errors.New("the second batch was not asked for while the first was written")
			}
		}
		return nil
	}, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// writeMetrics reads a store's write metrics.
type writeMetrics struct{ r *sdkmetric.ManualReader }

func (m writeMetrics) outcome(t *testing.T, o string) int64 {
	return metricstest.Value(t, m.r, "meterstore.write.outcomes", tableIs("power"), attribute.String(metrics.AttrOutcome, o))
}

func (m writeMetrics) value(t *testing.T, name string) int64 {
	return metricstest.Value(t, m.r, name, tableIs("power"))
}
