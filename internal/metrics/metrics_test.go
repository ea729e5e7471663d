package metrics

import (
	"context"
	"slices"
	"strings"
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
	m.ArchivalFailed(ctx, "lastgang", FailureConflict)
	m.ArchivalFailed(ctx, "lastgang", FailureConflict)
	m.ArchivalFailed(ctx, "gas", FailureQuarantine)
	m.PartitionsDropped(ctx, "lastgang", 3)
	m.PartitionsDropped(ctx, "lastgang", 0)
	m.Healthy(ctx, "lastgang", true)
	m.Healthy(ctx, "gas", false)
	m.CompareAndSet(ctx, BackendPostgres, "lastgang", CASCommitted, 2*time.Millisecond)
	m.CompareAndSet(ctx, BackendPostgres, "lastgang", CASMismatch, 3*time.Millisecond)
	m.CompareAndSet(ctx, BackendPostgres, RegistryTable, CASMismatch, 5*time.Millisecond)
	m.Compacted(ctx, "lastgang", CompactionCompacted, 8, 8000, 2, 7000)
	m.Compacted(ctx, "lastgang", CompactionSkipped, 5, 5, 5, 5)
	m.Orphans(ctx, "lastgang", 4, 400, 0, 0)
	m.Orphans(ctx, "lastgang", 3, 300, 3, 300)
	m.RetentionFailed(ctx)
	m.Watermark(ctx, "lastgang", 36*time.Hour)
	m.PartitionsAhead(ctx, "lastgang", 3)
	m.InvariantViolations(ctx, "lastgang", 0)
	m.InvariantViolations(ctx, "gas", -1)
	m.MirrorForks(ctx, "lastgang", 2)
	m.Written(ctx, "lastgang", 90, 6)
	m.WriteOutcomes(ctx, "lastgang", "superseded", 3)
	m.WriteOutcomes(ctx, "lastgang", "inserted", 87)
	m.WriteOutcomes(ctx, "lastgang", "shadowed", 0) // nothing to count
	m.LateCorrections(ctx, "lastgang", 4)
	m.Queried(ctx, "lastgang", 250*time.Millisecond)
	m.Scanned(ctx, "lastgang", TierHot, 10)
	m.Scanned(ctx, "lastgang", TierCold, 20)
	m.Scanned(ctx, "lastgang", TierHot, 5)
	m.RetentionRemoved(ctx, 7)
	m.AuthFailure(ctx, ReasonInvalid)
	m.AuthFailure(ctx, ReasonMissing)
	m.AuthFailureVia(ctx, ProtocolHTTP, ReasonInvalid)
	m.AuthFailureVia(ctx, ProtocolPostgres, ReasonInvalid)
	m.HTTPRequest(ctx, "/v1/status", "GET", 200, 20*time.Millisecond)
	m.HTTPRequest(ctx, "/v1/status", "GET", 200, 30*time.Millisecond)
	m.HTTPRequest(ctx, "", "BREW", 404, -time.Second)
	m.FooterCache(ctx, false, 1, 4096)
	m.FooterCache(ctx, true, 1, 4096)
	m.FooterCache(ctx, true, 2, 8192)
	m.CopyLookup(ctx, false)
	m.CopyLookup(ctx, false)
	m.CopyLookup(ctx, true)
	m.CopiesTrimmed(ctx, 9000, 0)
	m.CopiesTrimmed(ctx, 6000, 2)
	// Counters ignore what would make them go down.
	m.Archived(ctx, "lastgang", -1, -time.Second)
	m.Written(ctx, "lastgang", -1, -1)
	m.WriteOutcomes(ctx, "lastgang", "inserted", -1)
	m.LateCorrections(ctx, "lastgang", -1)
	m.Scanned(ctx, "lastgang", TierHot, -1)
	m.Queried(ctx, "lastgang", -time.Second)
	m.RetentionRemoved(ctx, -1)

	m.PartitionsDropped(ctx, "lastgang", -1)
	m.CompareAndSet(ctx, BackendPostgres, "lastgang", CASCommitted, -time.Second)

	table := func(name string) string { return "table=" + name }
	scan := func(name, tier string) string { return "table=" + name + ",tier=" + tier }
	req := func(route, method, status string) string {
		return "method=" + method + ",route=" + route + ",status=" + status
	}
	want := map[string]instrument{
		"meterstore.archival.rows":               {"{reading}", "counter", []point{{table("lastgang"), 96_000, 0}}},
		"meterstore.archival.duration":           {"s", "histogram", []point{{table("lastgang"), 1.5, 1}}},
		"meterstore.archival.deferred":           {"{cycle}", "counter", []point{{table("lastgang"), 2, 0}}},
		"meterstore.archival.lease_contended":    {"{cycle}", "counter", []point{{table("gas"), 1, 0}}},
		"meterstore.archival.failures":           {"{cycle}", "counter", []point{{"reason=conflict,table=lastgang", 2, 0}, {"reason=quarantine,table=gas", 1, 0}}},
		"meterstore.archival.partitions_dropped": {"{partition}", "counter", []point{{table("lastgang"), 3, 0}}},
		"meterstore.table.watermark_lag":         {"s", "gauge", []point{{table("lastgang"), 36 * 3600, 0}}},
		"meterstore.table.partitions_ahead":      {"{partition}", "gauge", []point{{table("lastgang"), 3, 0}}},
		"meterstore.table.invariant_violations":  {"{violation}", "gauge", []point{{table("gas"), -1, 0}, {table("lastgang"), 0, 0}}},
		"meterstore.table.mirror_forks":          {"{file}", "gauge", []point{{table("lastgang"), 2, 0}}},
		"meterstore.table.healthy":               {"", "gauge", []point{{table("gas"), 0, 0}, {table("lastgang"), 1, 0}}},
		"meterstore.log.cas.duration": {"s", "histogram", []point{
			{"backend=postgres,outcome=committed", 0.002, 1}, {"backend=postgres,outcome=mismatch", 0.008, 2}}},
		"meterstore.log.cas.mismatches": {"{conflict}", "counter", []point{
			{"backend=postgres,table=<registry>", 1, 0}, {"backend=postgres,table=lastgang", 1, 0}}},
		"meterstore.compaction.runs": {"{run}", "counter", []point{
			{"outcome=compacted,table=lastgang", 1, 0}, {"outcome=skipped,table=lastgang", 1, 0}}},
		"meterstore.compaction.rewritten_files": {"{file}", "counter", []point{{table("lastgang"), 8, 0}}},
		"meterstore.compaction.rewritten_bytes": {"By", "counter", []point{{table("lastgang"), 8000, 0}}},
		"meterstore.compaction.written_files":   {"{file}", "counter", []point{{table("lastgang"), 2, 0}}},
		"meterstore.compaction.written_bytes":   {"By", "counter", []point{{table("lastgang"), 7000, 0}}},
		"meterstore.orphans.found_files":        {"{file}", "gauge", []point{{table("lastgang"), 3, 0}}},
		"meterstore.orphans.found_bytes":        {"By", "gauge", []point{{table("lastgang"), 300, 0}}},
		"meterstore.orphans.removed_files":      {"{file}", "counter", []point{{table("lastgang"), 3, 0}}},
		"meterstore.orphans.removed_bytes":      {"By", "counter", []point{{table("lastgang"), 300, 0}}},
		"meterstore.retention.failures":         {"{sweep}", "counter", []point{{"", 1, 0}}},
		"meterstore.write.rows":                 {"{reading}", "counter", []point{{table("lastgang"), 90, 0}}},
		"meterstore.write.duplicates":           {"{reading}", "counter", []point{{table("lastgang"), 6, 0}}},
		"meterstore.write.late_corrections":     {"{reading}", "counter", []point{{table("lastgang"), 4, 0}}},
		"meterstore.write.outcomes": {"{reading}", "counter", []point{
			{"outcome=inserted,table=lastgang", 87, 0}, {"outcome=superseded,table=lastgang", 3, 0}}},
		"meterstore.query.duration":             {"s", "histogram", []point{{table("lastgang"), 0.25, 1}}},
		"meterstore.scan.rows":                  {"{reading}", "counter", []point{{scan("lastgang", "cold"), 20, 0}, {scan("lastgang", "hot"), 15, 0}}},
		"meterstore.retention.removed":          {"{reference}", "counter", []point{{"", 7, 0}}},
		"meterstore.http.auth_failures":         {"{request}", "counter", []point{{"protocol=http,reason=invalid", 2, 0}, {"protocol=http,reason=missing", 1, 0}, {"protocol=postgres,reason=invalid", 1, 0}}},
		"meterstore.http.requests":              {"{request}", "counter", []point{{req("/v1/status", "GET", "200"), 2, 0}, {req("unmatched", "_OTHER", "404"), 1, 0}}},
		"meterstore.http.request.duration":      {"s", "histogram", []point{{req("/v1/status", "GET", "200"), 0.05, 2}}},
		"meterstore.query.footer_cache_lookups": {"{lookup}", "counter", []point{{"outcome=hit", 2, 0}, {"outcome=miss", 1, 0}}},
		"meterstore.query.footer_cache_files":   {"{file}", "gauge", []point{{"", 2, 0}}},
		"meterstore.query.footer_cache_bytes":   {"By", "gauge", []point{{"", 8192, 0}}},
		"meterstore.query.copy_lookups":         {"{lookup}", "counter", []point{{"outcome=hit", 1, 0}, {"outcome=miss", 2, 0}}},
		"meterstore.query.copy_bytes":           {"By", "gauge", []point{{"", 6000, 0}}},
		"meterstore.query.copies_removed":       {"{file}", "counter", []point{{"", 2, 0}}},
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

	// Sample records on every instrument the attributes its methods
	// record, which is what the documentation lists.
	sampled := sdkmetric.NewManualReader()
	ms, err := New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sampled)))
	if err != nil {
		t.Fatal(err)
	}
	ms.Sample(ctx)
	samples := collect(t, sampled)
	for name, w := range want {
		s, ok := samples[name]
		if !ok || len(s.points) != 1 {
			t.Errorf("Sample: %s recorded %+v", name, s.points)
			continue
		}
		if got, want := keys(s.points[0].attrs), keys(w.points[0].attrs); got != want {
			t.Errorf("Sample: %s has attributes %q, its method records %q", name, got, want)
		}
	}
	if len(samples) != len(want) {
		t.Errorf("Sample recorded %d instruments, want %d", len(samples), len(want))
	}
}

// keys returns the keys of an encoded attribute set.
func keys(enc string) string {
	if enc == "" {
		return ""
	}
	var out []string
	for kv := range strings.SplitSeq(enc, ",") {
		k, _, _ := strings.Cut(kv, "=")
		out = append(out, k)
	}
	return strings.Join(out, ",")
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
		m.ArchivalFailed(ctx, "t", FailureOther)
		m.PartitionsDropped(ctx, "t", 1)
		m.Healthy(ctx, "t", true)
		m.CompareAndSet(ctx, BackendObjectStore, "t", CASMismatch, time.Millisecond)
		m.Compacted(ctx, "t", CompactionCompacted, 1, 1, 1, 1)
		m.Orphans(ctx, "t", 1, 1, 1, 1)
		m.RetentionFailed(ctx)
		m.Sample(ctx)
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
