package store

import (
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/meterstore/meterstore/internal/metrics"
	"github.com/meterstore/meterstore/internal/metrics/metricstest"
	"github.com/meterstore/meterstore/series"
)

// TestRollingUpgradeAddsColumn: during a rolling upgrade that adds a
// nullable column, a replica still on the older declaration wins the
// archive lease for a window whose readings hold values in the new column.
// It archives nothing of them and pages nobody: its cycle is deferred,
// not quarantined, the table reads healthy in the cycle, in status and in
// system.tables, and no archival failure is counted. A newer replica then
// archives the window with its values.
func TestRollingUpgradeAddsColumn(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	mp, reader := metricstest.New(t)
	older := e.open(t, Options{Meters: mp})
	newer := e.open(t, Options{Tables: []Table{withColumns(series.Column{Name: "note"})}})
	mustWrite(t, newer, []Reading{withNote(qh(1, 0, 1, "A", 1, 1000), "new"), qh(1, 1, 1, "A", 1, 1000)})

	out := older.Maintenance().Cycle(ctx, dayN(3))
	to := out.Tables[0]
	if to.Archive.Status != ArchiveDeferred || to.Err != nil || len(to.Archive.Windows) != 0 || !strings.Contains(to.Archive.Waiting, `"note"`) {
		t.Fatalf("the older replica's cycle: %+v, err %v; want deferred, naming the column, nothing archived", to.Archive, to.Err)
	}
	if !to.Healthy() || !out.Healthy() || !to.Status.Healthy {
		t.Fatalf("the older replica's cycle reads unhealthy: %+v, status %+v", out.Unhealthy(), to.Status)
	}
	if st := older.Status(ctx, dayN(3))[0]; !st.Healthy || st.Err != nil {
		t.Fatalf("status on the older replica: %+v", st)
	}
	if res := mustQuery(t, older, `SELECT healthy, error FROM system.tables WHERE "table" = 'power'`); res.Rows[0][0] != true {
		t.Fatalf("system.tables on the older replica: %v", res.Rows)
	}
	if n := metricstest.Value(t, reader, "meterstore.archival.failures"); n != 0 {
		t.Errorf("meterstore.archival.failures = %d after a deferral, want 0", n)
	}
	quarantine := attribute.String(metrics.AttrReason, metrics.FailureQuarantine)
	if n := metricstest.Value(t, reader, "meterstore.archival.failures", tableIs("power"), quarantine); n != 0 {
		t.Errorf("meterstore.archival.failures{reason=quarantine} = %d, want 0", n)
	}
	if n := metricstest.Value(t, reader, "meterstore.archival.deferred", tableIs("power")); n != 1 {
		t.Errorf("meterstore.archival.deferred = %d, want 1", n)
	}
	if w, ok, err := older.Watermark(ctx, "power"); err != nil || ok {
		t.Fatalf("W %v, %v (%v) after the deferral; want none", w, ok, err)
	}

	if out, err := newer.Archive(ctx, "power", dayN(3)); err != nil || out.Status != ArchiveArchived || !out.Watermark.Equal(dayN(1)) {
		t.Fatalf("the newer replica's archival: %+v, %v", out, err)
	}
	if got := notes(t, newer); !slices.Contains(got, "0302T0015|new") {
		t.Fatalf("notes after the newer replica archived: %v", got)
	}
}
