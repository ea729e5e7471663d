package metrics

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// ScopeName is the instrumentation scope of every instrument.
const ScopeName = "github.com/meterstore/meterstore"

// Attribute keys.
const (
	// AttrTable names the table a measurement concerns.
	AttrTable = "table"
	// AttrTier names the tier a scan read: TierHot or TierCold.
	AttrTier = "tier"
	// AttrReason says why a request was refused: ReasonMissing,
	// ReasonInvalid or ReasonForbidden.
	AttrReason = "reason"
	// AttrRoute is the route pattern that took an HTTP request, such as
	// "/v1/status", or RouteUnmatched.
	AttrRoute = "route"
	// AttrMethod is an HTTP request's method, or MethodOther.
	AttrMethod = "method"
	// AttrStatus is the status code of an HTTP response.
	AttrStatus = "status"
)

// Values of the route and method attributes of HTTP requests that would
// otherwise be unbounded.
const (
	RouteUnmatched = "unmatched" // no route took the request (a 404)
	MethodOther    = "_OTHER"    // a method that is not one of the standard ones
)

// Values of the reason attribute of refused requests.
const (
	ReasonMissing   = "missing"   // no bearer token
	ReasonInvalid   = "invalid"   // a token the server does not know
	ReasonForbidden = "forbidden" // a known token without the scope or table
)

// Values of the tier attribute.
const (
	TierHot  = "hot"  // the PostgreSQL tier
	TierCold = "cold" // the Iceberg tier
)

// Metrics holds MeterStore's instruments. Its methods are safe for
// concurrent use, and a nil *Metrics records nothing.
type Metrics struct {
	archivedRows     metric.Int64Counter
	archivalDuration metric.Float64Histogram
	deferred         metric.Int64Counter
	leaseContended   metric.Int64Counter
	watermarkLag     metric.Float64Gauge
	partitionsAhead  metric.Int64Gauge
	violations       metric.Int64Gauge
	mirrorForks      metric.Int64Gauge
	writtenRows      metric.Int64Counter
	duplicates       metric.Int64Counter
	lateCorrections  metric.Int64Counter
	queryDuration    metric.Float64Histogram
	scannedRows      metric.Int64Counter
	retentionRemoved metric.Int64Counter
	authFailures     metric.Int64Counter
	httpRequests     metric.Int64Counter
	httpDuration     metric.Float64Histogram
}

// New creates the instruments with mp's meter for ScopeName. A nil mp
// means a no-op provider: the instruments exist and record nothing until
// the application passes a real one. New fails if mp refuses an
// instrument.
func New(mp metric.MeterProvider) (*Metrics, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	b := builder{meter: mp.Meter(ScopeName)}
	// Bucket boundaries, in seconds. An archival moves a whole window and
	// takes seconds to minutes; a query takes milliseconds to minutes.
	archivalBuckets := []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500}
	// An HTTP request is a query, a write or a health check.
	httpBuckets := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	queryBuckets := []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}
	m := &Metrics{
		archivedRows: b.counter("meterstore.archival.rows", "{reading}",
			"Readings moved from the hot to the cold tier."),
		archivalDuration: b.histogram("meterstore.archival.duration", archivalBuckets,
			"Duration of archiving one window of a table, from lease to commit."),
		deferred: b.counter("meterstore.archival.deferred", "{cycle}",
			"Archival cycles that gave up because a partition's lock was not available in time; benign unless persistent."),
		leaseContended: b.counter("meterstore.archival.lease_contended", "{cycle}",
			"Archival cycles that stopped because another replica held the archive lease; not a failure."),
		watermarkLag: b.floatGauge("meterstore.watermark.lag", "s",
			"Now minus the table's watermark, at the last status check."),
		partitionsAhead: b.intGauge("meterstore.partitions.ahead", "{partition}",
			"Attached hot partitions that can still take a reading from now on, at the last status check; -1 when they could not be listed."),
		violations: b.intGauge("meterstore.invariant.violations", "{violation}",
			"Invariant violations (readings left in the hot tier below the watermark) at the last status check; -1 when it could not run."),
		mirrorForks: b.intGauge("meterstore.mirror.forks", "{file}",
			"Files in the table's Hadoop-layout metadata mirror that MeterStore did not write (another writer's commit), at the last status check; -1 when it could not run."),
		writtenRows: b.counter("meterstore.write.rows", "{reading}",
			"Readings a write inserted."),
		duplicates: b.counter("meterstore.write.duplicates", "{reading}",
			"Readings a write found already stored, identical, and skipped."),
		lateCorrections: b.counter("meterstore.write.late_corrections", "{reading}",
			"Readings written below the watermark and routed to the cold tier."),
		queryDuration: b.histogram("meterstore.query.duration", queryBuckets,
			"Duration of a query, from planning to the last row."),
		scannedRows: b.counter("meterstore.scan.rows", "{reading}",
			"Readings a scan read from one tier."),
		retentionRemoved: b.counter("meterstore.retention.removed", "{reference}",
			"Subject references whose link to a natural id a retention sweep destroyed, across the deployment."),
		authFailures: b.counter("meterstore.http.auth_failures", "{request}",
			"HTTP requests refused for a missing or unknown bearer token (401) or one without the scope or table (403)."),
		httpRequests: b.counter("meterstore.http.requests", "{request}",
			"HTTP requests the server answered, by route, method and status code."),
		httpDuration: b.histogram("meterstore.http.request.duration", httpBuckets,
			"Duration of an HTTP request, from routing to the handler's return."),
	}
	if err := errors.Join(b.errs...); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return m, nil
}

// builder creates instruments and collects the errors of their creation.
type builder struct {
	meter metric.Meter
	errs  []error
}

func (b *builder) check(name string, err error) {
	if err != nil {
		b.errs = append(b.errs, fmt.Errorf("create %s: %w", name, err))
	}
}

func (b *builder) counter(name, unit, desc string) metric.Int64Counter {
	c, err := b.meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	b.check(name, err)
	return c
}

func (b *builder) histogram(name string, buckets []float64, desc string) metric.Float64Histogram {
	h, err := b.meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(buckets...))
	b.check(name, err)
	return h
}

func (b *builder) floatGauge(name, unit, desc string) metric.Float64Gauge {
	g, err := b.meter.Float64Gauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
	b.check(name, err)
	return g
}

func (b *builder) intGauge(name, unit, desc string) metric.Int64Gauge {
	g, err := b.meter.Int64Gauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
	b.check(name, err)
	return g
}
