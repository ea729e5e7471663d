package metrics

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// point is one recorded data point, reduced to what the tests compare.
type point struct {
	attrs string  // the attribute set, encoded
	value float64 // the sum, the gauge value or the histogram's sum
	count uint64  // the histogram's count
}

type instrument struct {
	unit, kind string
	points     []point
}

// collect returns what reader holds, by instrument name, and checks the
// scope and descriptions on the way.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]instrument {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]instrument{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, ScopeName)
		}
		for _, md := range sm.Metrics {
			if md.Description == "" {
				t.Errorf("%s has no description", md.Name)
			}
			in := instrument{unit: md.Unit}
			enc := func(s attribute.Set) string { return s.Encoded(attribute.DefaultEncoder()) }
			switch d := md.Data.(type) {
			case metricdata.Sum[int64]:
				in.kind = "counter"
				if !d.IsMonotonic {
					in.kind = "updown"
				}
				for _, p := range d.DataPoints {
					in.points = append(in.points, point{attrs: enc(p.Attributes), value: float64(p.Value)})
				}
			case metricdata.Gauge[int64]:
				in.kind = "gauge"
				for _, p := range d.DataPoints {
					in.points = append(in.points, point{attrs: enc(p.Attributes), value: float64(p.Value)})
				}
			case metricdata.Gauge[float64]:
				in.kind = "gauge"
				for _, p := range d.DataPoints {
					in.points = append(in.points, point{attrs: enc(p.Attributes), value: p.Value})
				}
			case metricdata.Histogram[float64]:
				in.kind = "histogram"
				for _, p := range d.DataPoints {
					in.points = append(in.points, point{attrs: enc(p.Attributes), value: p.Sum, count: p.Count})
				}
			default:
				t.Errorf("%s: unexpected data %T", md.Name, md.Data)
			}
			slices.SortFunc(in.points, func(a, b point) int {
				if a.attrs < b.attrs {
					return -1
				}
				if a.attrs > b.attrs {
					return 1
				}
				return 0
			})
			out[md.Name] = in
		}
	}
	return out
}

func TestInstruments(t *testing.T) {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	m, err := New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	m.Archived(ctx, "lastgang", 96_000, 1500*time.Millisecond)
	m.Deferred(ctx, "lastgang")
	m.Deferred(ctx, "lastgang")
	m.LeaseContended(ctx, "gas")
	m.Watermark(ctx, "lastgang", 36*time.Hour)
	m.PartitionsAhead(ctx, "lastgang", 3)
	m.InvariantViolations(ctx, "lastgang", 0)
	m.InvariantViolations(ctx, "gas", -1)
	m.MirrorForks(ctx, "lastgang", 2)
	m.Written(ctx, "lastgang", 90, 6)
	m.LateCorrections(ctx, "lastgang", 4)
	m.Queried(ctx, "lastgang", 250*time.Millisecond)
	m.Scanned(ctx, "lastgang", TierHot, 10)
	m.Scanned(ctx, "lastgang", TierCold, 20)
	m.Scanned(ctx, "lastgang", TierHot, 5)
	m.RetentionRemoved(ctx, 7)
	m.AuthFailure(ctx, ReasonInvalid)
	m.AuthFailure(ctx, ReasonMissing)
	m.AuthFailure(ctx, ReasonInvalid)
	m.HTTPRequest(ctx, "/v1/status", "GET", 200, 20*time.Millisecond)
	m.HTTPRequest(ctx, "/v1/status", "GET", 200, 30*time.Millisecond)
	m.HTTPRequest(ctx, "", "BREW", 404, -time.Second)
	// Counters ignore what would make them go down.
	m.Archived(ctx, "lastgang", -1, -time.Second)
	m.Written(ctx, "lastgang", -1, -1)
	m.LateCorrections(ctx, "lastgang", -1)
	m.Scanned(ctx, "lastgang", TierHot, -1)
	m.Queried(ctx, "lastgang", -time.Second)
	m.RetentionRemoved(ctx, -1)

	table := func(name string) string { return "table=" + name }
	scan := func(name, tier string) string { return "table=" + name + ",tier=" + tier }
	req := func(route, method, status string) string {
		return "method=" + method + ",route=" + route + ",status=" + status
	}
	want := map[string]instrument{
		"meterstore.archival.rows":            {"{reading}", "counter", []point{{table("lastgang"), 96_000, 0}}},
		"meterstore.archival.duration":        {"s", "histogram", []point{{table("lastgang"), 1.5, 1}}},
		"meterstore.archival.deferred":        {"{cycle}", "counter", []point{{table("lastgang"), 2, 0}}},
		"meterstore.archival.lease_contended": {"{cycle}", "counter", []point{{table("gas"), 1, 0}}},
		"meterstore.watermark.lag":            {"s", "gauge", []point{{table("lastgang"), 36 * 3600, 0}}},
		"meterstore.partitions.ahead":         {"{partition}", "gauge", []point{{table("lastgang"), 3, 0}}},
		"meterstore.invariant.violations":     {"{violation}", "gauge", []point{{table("gas"), -1, 0}, {table("lastgang"), 0, 0}}},
		"meterstore.mirror.forks":             {"{file}", "gauge", []point{{table("lastgang"), 2, 0}}},
		"meterstore.write.rows":               {"{reading}", "counter", []point{{table("lastgang"), 90, 0}}},
		"meterstore.write.duplicates":         {"{reading}", "counter", []point{{table("lastgang"), 6, 0}}},
		"meterstore.write.late_corrections":   {"{reading}", "counter", []point{{table("lastgang"), 4, 0}}},
		"meterstore.query.duration":           {"s", "histogram", []point{{table("lastgang"), 0.25, 1}}},
		"meterstore.scan.rows":                {"{reading}", "counter", []point{{scan("lastgang", "cold"), 20, 0}, {scan("lastgang", "hot"), 15, 0}}},
		"meterstore.retention.removed":        {"{reference}", "counter", []point{{"", 7, 0}}},
		"meterstore.http.auth_failures":       {"{request}", "counter", []point{{"reason=invalid", 2, 0}, {"reason=missing", 1, 0}}},
		"meterstore.http.requests":            {"{request}", "counter", []point{{req("/v1/status", "GET", "200"), 2, 0}, {req("unmatched", "_OTHER", "404"), 1, 0}}},
		"meterstore.http.request.duration":    {"s", "histogram", []point{{req("/v1/status", "GET", "200"), 0.05, 2}}},
	}
	got := collect(t, reader)
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s: not recorded", name)
			continue
		}
		if g.unit != w.unit || g.kind != w.kind || !slices.Equal(g.points, w.points) {
			t.Errorf("%s: %s %s %+v, want %s %s %+v", name, g.unit, g.kind, g.points, w.unit, w.kind, w.points)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected instrument %s", name)
		}
	}
}

// Without a provider, or without Metrics, recording does nothing and
// does not panic.
func TestNoProvider(t *testing.T) {
	m, err := New(nil)
	if err != nil || m == nil {
		t.Fatalf("New(nil) = %v, %v", m, err)
	}
	for _, m := range []*Metrics{m, nil} {
		ctx := context.Background()
		m.Archived(ctx, "t", 1, time.Second)
		m.Deferred(ctx, "t")
		m.LeaseContended(ctx, "t")
		m.Watermark(ctx, "t", time.Hour)
		m.PartitionsAhead(ctx, "t", 1)
		m.InvariantViolations(ctx, "t", 1)
		m.MirrorForks(ctx, "t", 1)
		m.Written(ctx, "t", 1, 1)
		m.LateCorrections(ctx, "t", 1)
		m.Scanned(ctx, "t", TierCold, 1)
		m.Queried(ctx, "t", time.Second)
		m.RetentionRemoved(ctx, 1)
		m.AuthFailure(ctx, ReasonForbidden)
		m.HTTPRequest(ctx, "/healthz", "GET", 200, time.Millisecond)
	}
}
