package archive

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/meterstore/meterstore/internal/cold"
)

// TestQuarantinedTableStopsArchiving: an operator adds a NOT NULL column to
// the cold table out of band. The next cycle reports Quarantined with the
// reason, detaches nothing and leaves W where it was.
func TestQuarantinedTableStopsArchiving(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, 4)
	o := newOracle()
	fill(t, e, o, 2, 0, 1, 2, 3)
	a := e.archiver(t, dayConfig)
	out, err := a.Cycle(ctx, e.t, e.ct, dayN(2))
	if err != nil || out.Status != Archived {
		t.Fatalf("first cycle: %+v, %v", out, err)
	}
	w := out.Watermark

	ice, err := e.cold.Iceberg(ctx, e.ct)
	if err != nil {
		t.Fatal(err)
	}
	tx := ice.NewTransaction()
	if err := tx.UpdateSchema(true, true).AddColumn([]string{"tariff"}, iceberg.PrimitiveTypes.String, "", true, nil).Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	out, err = a.Cycle(ctx, e.t, e.ct, dayN(5))
	var q *cold.QuarantineError
	if out.Status != Quarantined || !errors.As(err, &q) || !strings.Contains(err.Error(), "tariff") {
		t.Fatalf("cycle after drift: %+v, %v; want Quarantined naming the column", out, err)
	}
	parts, err := e.hot.Partitions(ctx, e.t)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if !p.Attached && !p.From.Before(w) {
			t.Errorf("partition %s was detached by a quarantined cycle", p.Name)
		}
	}
	if got, _, _ := e.cold.Watermark(ctx, e.ct); !got.Equal(w) {
		t.Errorf("W moved from %v to %v while quarantined", w, got)
	}
	checkTiers(t, e, o.snapshot())
}
