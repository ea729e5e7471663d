package cold

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/internal/resolve"
	"github.com/meterstore/meterstore/internal/rollup"
)

// TestDailyView: the daily view of a rollup table (of a table with the
// identity column channel) resolves each series' day, its identity
// column included, by the highest rollup_version in every view dialect
// over the rollup named in the catalog; its schema is the rollup's
// without rollup_version and its properties carry the watermark and the
// source snapshot of the rollup's current snapshot. A readings table has
// no daily view and a rollup no readings view, each refused as no view;
// both views come from Views, by name.
func TestDailyView(t *testing.T) {
	e := newEnv(t, Options{})
	f := &rollupFixture{e: e, tab: loadProfile("power"), rng: rand.New(rand.NewPCG(50, 1))}
	f.h = e.ensure(t, f.tab)
	f.archive(t, time.Date(2026, 3, 27, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC))
	if _, err := e.tier.CatchUpRollup(t.Context(), f.h); err != nil {
		t.Fatal(err)
	}
	r := e.tier.RollupHandle(f.h)
	ice, err := e.tier.Iceberg(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	src, err := e.tier.Iceberg(t.Context(), f.h)
	if err != nil {
		t.Fatal(err)
	}
	var v Views
	names := v.ViewsOf(r.Identifier()[1])
	if len(names) != 2 || names[1] != r.Identifier()[1]+DailyViewSuffix {
		t.Fatalf("ViewsOf(%s) = %v", r.Identifier()[1], names)
	}
	if name, err := v.TableOf(r.Identifier()[0], names[1]); err != nil || name != r.Identifier()[1] {
		t.Fatalf("TableOf(%s) = %q, %v", names[1], name, err)
	}
	ident := table.Identifier{r.Identifier()[0], names[1]}
	vm, err := v.View(ident, r.Identifier(), ice.Metadata(), "lake")
	if err != nil {
		t.Fatal(err)
	}
	summary := ice.CurrentSnapshot().Summary.Properties
	if p := vm.Properties(); p[rollup.SummaryWatermark] == "" || p[rollup.SummaryWatermark] != summary[rollup.SummaryWatermark] ||
		p[rollup.SummarySourceSnapshot] != summary[rollup.SummarySourceSnapshot] || p["meterstore.rollup"] != strings.Join(r.Identifier(), ".") {
		t.Errorf("view properties %v, the rollup's summary %v", p, summary)
	}
	var cols []string
	for _, fl := range ice.Schema().Fields() {
		if fl.Name != "rollup_version" {
			cols = append(cols, fl.Name)
		}
	}
	var got []string
	for _, fl := range vm.Schemas()[0].Fields() {
		got = append(got, fl.Name)
	}
	if strings.Join(got, ",") != strings.Join(cols, ",") {
		t.Errorf("the view's columns %v, want the rollup's without rollup_version %v", got, cols)
	}
	reps := vm.Versions()[0].Representations
	if len(reps) != len(resolve.ViewDialects) {
		t.Fatalf("%d representations, want %d", len(reps), len(resolve.ViewDialects))
	}
	key := []string{"malo_id", "obis_code", "channel", "balancing_day"}
	for i, d := range resolve.ViewDialects {
		var quoted []string
		for _, k := range key {
			quoted = append(quoted, d.Ident(k))
		}
		part := "PARTITION BY " + strings.Join(quoted, ", ") + ")"
		if reps[i].Dialect != d.Name || !strings.Contains(reps[i].Sql, part) ||
			!strings.Contains(reps[i].Sql, d.Table("lake", r.Identifier()[0], r.Identifier()[1])) {
			t.Errorf("representation %d: %s %s, want %s over %s", i, reps[i].Dialect, reps[i].Sql, part, d.Table("lake", r.Identifier()[0], r.Identifier()[1]))
		}
	}

	// The readings table has no daily view, the rollup no readings view.
	if _, err := v.View(table.Identifier{f.h.Identifier()[0], f.h.Identifier()[1] + DailyViewSuffix}, f.h.Identifier(), src.Metadata(), ""); !errors.Is(err, icecatalog.ErrNoSuchView) {
		t.Errorf("the daily view of a readings table: %v, want ErrNoSuchView", err)
	}
	if _, err := v.View(table.Identifier{r.Identifier()[0], r.Identifier()[1] + ReadingsViewSuffix}, r.Identifier(), ice.Metadata(), ""); !errors.Is(err, icecatalog.ErrNoSuchView) {
		t.Errorf("the readings view of a rollup: %v, want ErrNoSuchView", err)
	}
	if rm, err := v.View(table.Identifier{f.h.Identifier()[0], f.h.Identifier()[1] + ReadingsViewSuffix}, f.h.Identifier(), src.Metadata(), ""); err != nil ||
		rm.Properties()[PropMergeKey] == "" {
		t.Errorf("the readings view through Views: %v", err)
	}
}
