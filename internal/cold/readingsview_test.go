package cold

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/internal/resolve"
	"github.com/meterstore/meterstore/series"
)

// TestReadingsViews: the readings view of a table the tier wrote reads
// the names the tier writes (merge key property, superseded column,
// watermark summary) from the table's metadata: its SQL is the resolution
// over the marks in every view dialect, its schema the table's without
// superseded, its properties the merge key and W. A table the tier did
// not write, and a name that is no readings view, have none.
func TestReadingsViews(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e.archive(t, h, start, start.Add(24*time.Hour), quarterHours(1, start, 4))
	ice, err := e.cat.LoadTable(t.Context(), h.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	v := ReadingsViews{}
	view := v.ViewsOf(h.Name())[0]
	if name, err := v.TableOf("metering", view); err != nil || name != h.Name() {
		t.Fatalf("TableOf(%s) = %q, %v", view, name, err)
	}
	if _, err := v.TableOf("metering", h.Name()); !errors.Is(err, icecatalog.ErrNoSuchView) {
		t.Fatalf("TableOf(%s) = %v, want ErrNoSuchView", h.Name(), err)
	}
	ident := table.Identifier{h.Identifier()[0], view}
	vm, err := v.View(ident, h.Identifier(), ice.Metadata(), "")
	if err != nil {
		t.Fatal(err)
	}
	if vm.Properties()[PropMergeKey] != strings.Join(tab.MergeKey(), ",") || vm.Properties()["meterstore.marked"] != "true" ||
		vm.Properties()[SummaryWatermark] != FormatTime(start.Add(24*time.Hour)) {
		t.Errorf("view properties %v", vm.Properties())
	}
	if _, ok := vm.Schemas()[0].FindFieldByName(series.ColumnSuperseded); ok {
		t.Errorf("the view's schema has %s", series.ColumnSuperseded)
	}
	reps := vm.Versions()[0].Representations
	if len(reps) != len(resolve.ViewDialects) {
		t.Fatalf("%d representations, want %d", len(reps), len(resolve.ViewDialects))
	}
	for i, d := range resolve.ViewDialects {
		if reps[i].Dialect != d.Name || !strings.Contains(reps[i].Sql, d.Ident(series.ColumnSuperseded)+" IS NULL") {
			t.Errorf("representation %d: %s %s", i, reps[i].Dialect, reps[i].Sql)
		}
	}

	plain, err := e.cat.CreateTable(t.Context(), table.Identifier{h.Identifier()[0], "plain"},
		iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "x", Type: iceberg.PrimitiveTypes.Int64}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.View(table.Identifier{"metering", "plain_readings"}, plain.Identifier(), plain.Metadata(), ""); !errors.Is(err, icecatalog.ErrNoSuchView) {
		t.Errorf("view of a table the tier did not write: %v, want ErrNoSuchView", err)
	}
}
