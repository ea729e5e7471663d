package store

import (
	"errors"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/meterstore/meterstore/internal/metrics"
	"github.com/meterstore/meterstore/internal/metrics/metricstest"
	"github.com/meterstore/meterstore/series"
)

// TestWriteOutcomesCounted writes a reading, redelivers it, corrects it,
// delivers an older version late, and has a batch refused for a
// restatement: each outcome shows in the WriteResult and in
// meterstore.write.outcomes, and the refused batch names its row with the
// reason and writes nothing.
func TestWriteOutcomesCounted(t *testing.T) {
	ctx := t.Context()
	mp, reader := metricstest.New(t)
	s := newEnv(t).open(t, Options{Meters: mp})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(2)); err != nil {
		t.Fatal(err)
	}
	want := func(res WriteResult, s series.Status) {
		t.Helper()
		if len(res.Status) != 1 || res.Status[0] != s {
			t.Fatalf("result %+v, want %v", res, s)
		}
	}
	want(mustWrite(t, s, []Reading{qh(1, 0, 4, "A", 10, 100)}), series.Inserted)
	want(mustWrite(t, s, []Reading{qh(1, 0, 4, "A", 10, 100)}), series.Present)
	want(mustWrite(t, s, []Reading{qh(1, 0, 4, "A", 20, 200)}), series.Superseded)
	want(mustWrite(t, s, []Reading{qh(1, 0, 4, "A", 15, 150)}), series.Shadowed)

	res, err := s.Write(ctx, "power", []Reading{qh(2, 0, 4, "A", 10, 100), qh(1, 0, 4, "A", 20, 999)})
	var e *series.Error
	if !errors.As(err, &e) || e.Kind != series.IntegrityViolation || len(e.Problems) != 1 || e.Problems[0].Row != 1 {
		t.Fatalf("restatement: %v", err)
	}
	if res.Refused != 1 || res.Status[1] != series.Refused || res.Status[0] != 0 {
		t.Fatalf("refused batch: %+v", res)
	}
	got, err := s.Query(ctx, "power", `SELECT count(*) FROM readings WHERE malo_id = '`+malo(2)+`'`)
	if err != nil {
		t.Fatal(err)
	}
	if n := got.Rows[0][0]; n != int64(0) {
		t.Fatalf("%v rows of the refused batch stored", n)
	}

	for o, n := range map[string]int64{"inserted": 1, "present": 1, "superseded": 1, "shadowed": 1, "refused": 1} {
		if v := metricstest.Value(t, reader, "meterstore.write.outcomes", tableIs("power"), attribute.String(metrics.AttrOutcome, o)); v != n {
			t.Errorf("meterstore.write.outcomes{outcome=%s} = %d, want %d", o, v, n)
		}
	}
}
