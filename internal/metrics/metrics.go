package metrics

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
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
	// AttrReason says why a request was refused (ReasonMissing,
	// ReasonInvalid or ReasonForbidden) or why an archival failed
	// (FailureQuarantine and the other Failure values).
	AttrReason = "reason"
	// AttrRoute is the route pattern that took an HTTP request, such as
	// "/v1/status", or RouteUnmatched.
	AttrRoute = "route"
	// AttrMethod is an HTTP request's method, or MethodOther.
	AttrMethod = "method"
	// AttrStatus is the status code of an HTTP response.
	AttrStatus = "status"
	// AttrBackend names the log a catalog commits through: BackendPostgres
	// or BackendObjectStore.
	AttrBackend = "backend"
	// AttrOutcome says how a compare-and-set (CASCommitted and the other
	// CAS values) or a compaction (CompactionCompacted and the other
	// Compaction values) ended, or what a write did with a reading (the
	// series.Status names: inserted, present, superseded, shadowed,
	// refused).
	AttrOutcome = "outcome"
	// AttrProtocol names the protocol a refused request came by:
	// ProtocolHTTP, ProtocolFlightSQL or ProtocolPostgres.
	AttrProtocol = "protocol"
)

// Values of the protocol attribute of refused requests.
const (
	ProtocolHTTP      = "http"
	ProtocolFlightSQL = "flight_sql"
	ProtocolPostgres  = "postgres"
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

// Values of the reason attribute of failed archivals: a class, so that an
// alert can tell an operator's problem from a passing one.
const (
	FailureQuarantine      = "quarantine"       // the declaration and a tier's schema disagree; archival halts
	FailureInvariant       = "invariant"        // something is true that must not be; an operator is needed
	FailureConflict        = "conflict"         // the commit lost to another, or the watermark check refused it
	FailureColdUnreachable = "cold_unreachable" // the warehouse or the catalog did not answer
	FailureTransient       = "transient"        // another failure that may pass when tried again
	FailureOther           = "other"            // a failure that will not pass by itself
)

// Values of the tier attribute.
const (
	TierHot  = "hot"  // the PostgreSQL tier
	TierCold = "cold" // the Iceberg tier
)

// Values of the backend attribute.
const (
	BackendPostgres    = "postgres"     // consensus/postgres
	BackendObjectStore = "object_store" // consensus/bloblog on the warehouse
)

// Values of the outcome attribute of a compare-and-set.
const (
	CASCommitted     = "committed"     // the entry was appended
	CASMismatch      = "mismatch"      // the head had moved: a lost race, nothing written
	CASTransient     = "transient"     // a failure that certainly wrote nothing; the writer retries
	CASIndeterminate = "indeterminate" // the outcome is unknown until the log is read again
	CASError         = "error"         // any other failure
)

// Values of the outcome attribute of a cache lookup (footers, copies).
const (
	CacheHit  = "hit"  // the footer was in the cache
	CacheMiss = "miss" // the footer was read from the file
)

// Values of the outcome attribute of a compaction.
const (
	CompactionCompacted      = "compacted"       // a commit rewrote files or manifests
	CompactionSkipped        = "skipped"         // nothing to rewrite, or below the thresholds
	CompactionConflict       = "conflict"        // another commit overtook it; nothing changed
	CompactionLeaseContended = "lease_contended" // another session held the archive lease
	CompactionFailed         = "failed"          // any other failure
)

// RegistryTable is the table attribute of the compare-and-sets on a
// catalog's registry of namespaces and tables, which is no table.
const RegistryTable = "<registry>"

// Metrics holds MeterStore's instruments. Its methods are safe for
// concurrent use, and a nil *Metrics records nothing.
type Metrics struct {
	archivedRows      metric.Int64Counter
	archivalDuration  metric.Float64Histogram
	deferred          metric.Int64Counter
	leaseContended    metric.Int64Counter
	archivalFailures  metric.Int64Counter
	partitionsDropped metric.Int64Counter

	watermarkLag    metric.Float64Gauge
	partitionsAhead metric.Int64Gauge
	violations      metric.Int64Gauge
	mirrorForks     metric.Int64Gauge
	healthy         metric.Int64Gauge

	writtenRows     metric.Int64Counter
	duplicates      metric.Int64Counter
	lateCorrections metric.Int64Counter
	writeOutcomes   metric.Int64Counter
	queryDuration   metric.Float64Histogram
	scannedRows     metric.Int64Counter

	footerLookups metric.Int64Counter
	footerFiles   metric.Int64Gauge
	footerBytes   metric.Int64Gauge

	copyLookups   metric.Int64Counter
	copyBytes     metric.Int64Gauge
	copiesRemoved metric.Int64Counter

	casDuration   metric.Float64Histogram
	casMismatches metric.Int64Counter

	compactions          metric.Int64Counter
	compactRewritten     metric.Int64Counter
	compactRewrittenSize metric.Int64Counter
	compactWritten       metric.Int64Counter
	compactWrittenSize   metric.Int64Counter

	orphansFound       metric.Int64Gauge
	orphansFoundSize   metric.Int64Gauge
	orphansRemoved     metric.Int64Counter
	orphansRemovedSize metric.Int64Counter

	retentionRemoved  metric.Int64Counter
	retentionFailures metric.Int64Counter

	authFailures metric.Int64Counter
	httpRequests metric.Int64Counter
	httpDuration metric.Float64Histogram

	// samples record one measurement on each instrument (see Sample).
	samples []func(context.Context)
}

// New creates the instruments with mp's meter for ScopeName. A nil mp
// means a no-op provider: the instruments exist and record nothing until
// the application passes a real one. New fails if mp refuses an
// instrument.
func New(mp metric.MeterProvider) (*Metrics, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := &Metrics{}
	b := builder{meter: mp.Meter(ScopeName), m: m}
	// Bucket boundaries, in seconds. An archival moves a whole window and
	// takes seconds to minutes; a query takes milliseconds to minutes.
	archivalBuckets := []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500}
	// An HTTP request is a query, a write or a health check.
	httpBuckets := []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	queryBuckets := []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}
	// A compare-and-set is one statement on PostgreSQL, one or two
	// requests to object storage: milliseconds, unless the log is in
	// trouble.
	casBuckets := []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	table := []string{AttrTable}

	m.archivedRows = b.counter("meterstore.archival.rows", "{reading}",
		"Readings moved from the hot to the cold tier.", table...)
	m.archivalDuration = b.histogram("meterstore.archival.duration", archivalBuckets,
		"Duration of archiving one window of a table, from lease to commit.", table...)
	m.deferred = b.counter("meterstore.archival.deferred", "{cycle}",
		"Archival cycles that gave up because a partition's lock was not available in time; benign unless persistent.", table...)
	m.leaseContended = b.counter("meterstore.archival.lease_contended", "{cycle}",
		"Archival cycles that stopped because another replica held the archive lease; not a failure.", table...)
	m.archivalFailures = b.counter("meterstore.archival.failures", "{cycle}",
		"Archival cycles that failed or found the table quarantined, by reason class.", AttrTable, AttrReason)
	m.partitionsDropped = b.counter("meterstore.archival.partitions_dropped", "{partition}",
		"Detached hot partitions an archival cycle dropped once their windows were archived and the reader grace had passed.", table...)

	m.watermarkLag = b.floatGauge("meterstore.table.watermark_lag", "s",
		"Now minus the table's watermark, at the last status check.", table...)
	m.partitionsAhead = b.intGauge("meterstore.table.partitions_ahead", "{partition}",
		"Attached hot partitions that can still take a reading from now on, at the last status check; -1 when they could not be listed.", table...)
	m.violations = b.intGauge("meterstore.table.invariant_violations", "{violation}",
		"Invariant violations (readings left in the hot tier below the watermark) at the last status check; -1 when it could not run.", table...)
	m.mirrorForks = b.intGauge("meterstore.table.mirror_forks", "{file}",
		"Files in the table's Hadoop-layout metadata mirror that MeterStore did not write (another writer's commit), at the last status check; -1 when it could not run.", table...)
	m.healthy = b.intGauge("meterstore.table.healthy", "",
		"1 when the last status check found the table healthy (system.tables.healthy), else 0.", table...)

	m.writtenRows = b.counter("meterstore.write.rows", "{reading}",
		"Readings a write inserted.", table...)
	m.duplicates = b.counter("meterstore.write.duplicates", "{reading}",
		"Readings a write found already stored, identical, and skipped.", table...)
	m.lateCorrections = b.counter("meterstore.write.late_corrections", "{reading}",
		"Readings written below the watermark and routed to the cold tier.", table...)
	m.writeOutcomes = b.counter("meterstore.write.outcomes", "{reading}",
		"Readings a write handled, by outcome: inserted, present, superseded, shadowed, refused.", AttrTable, AttrOutcome)
	m.queryDuration = b.histogram("meterstore.query.duration", queryBuckets,
		"Duration of a query, from planning to the last row.", table...)
	m.scannedRows = b.counter("meterstore.scan.rows", "{reading}",
		"Readings a scan read from one tier.", AttrTable, AttrTier)

	m.footerLookups = b.counter("meterstore.query.footer_cache_lookups", "{lookup}",
		"Lookups of a cold data file's Parquet footer by a typed series read, by outcome: hit or miss.", AttrOutcome)
	m.footerFiles = b.intGauge("meterstore.query.footer_cache_files", "{file}",
		"Cold data files whose footers the typed series reads' cache holds.")
	m.footerBytes = b.intGauge("meterstore.query.footer_cache_bytes", "By",
		"Serialized bytes of the footers and page indexes the typed series reads' cache holds; bounded by query.footer_cache_bytes.")

	m.copyLookups = b.counter("meterstore.query.copy_lookups", "{lookup}",
		"Lookups of the local copy of a remote cold data file by a query, by outcome: hit, or miss (the file was copied).", AttrOutcome)
	m.copyBytes = b.intGauge("meterstore.query.copy_bytes", "By",
		"Bytes of the local copies of remote cold data files in query.cache_dir after the last copy made; bounded by query.cache_bytes but for copies used within the idle time.")
	m.copiesRemoved = b.counter("meterstore.query.copies_removed", "{file}",
		"Local copies of remote cold data files removed to keep query.cache_bytes.")

	m.casDuration = b.histogram("meterstore.log.cas.duration", casBuckets,
		"Duration of a compare-and-set on the catalog's log, by backend and outcome.", AttrBackend, AttrOutcome)
	m.casMismatches = b.counter("meterstore.log.cas.mismatches", "{conflict}",
		"Compare-and-sets on the catalog's log that found the head moved: races lost to another writer of the table.", AttrBackend, AttrTable)

	m.compactions = b.counter("meterstore.compaction.runs", "{run}",
		"Compactions of a table's cold tier, by outcome.", AttrTable, AttrOutcome)
	m.compactRewritten = b.counter("meterstore.compaction.rewritten_files", "{file}",
		"Data files a compaction replaced.", table...)
	m.compactRewrittenSize = b.counter("meterstore.compaction.rewritten_bytes", "By",
		"Size of the data files a compaction replaced.", table...)
	m.compactWritten = b.counter("meterstore.compaction.written_files", "{file}",
		"Data files a compaction wrote in their place.", table...)
	m.compactWrittenSize = b.counter("meterstore.compaction.written_bytes", "By",
		"Size of the data files a compaction wrote.", table...)

	m.orphansFound = b.intGauge("meterstore.orphans.found_files", "{file}",
		"Orphan files (referenced by nothing, older than the safety age) the last orphan run found under the table's location.", table...)
	m.orphansFoundSize = b.intGauge("meterstore.orphans.found_bytes", "By",
		"Size of the orphan files the last orphan run found.", table...)
	m.orphansRemoved = b.counter("meterstore.orphans.removed_files", "{file}",
		"Orphan files deleted.", table...)
	m.orphansRemovedSize = b.counter("meterstore.orphans.removed_bytes", "By",
		"Size of the orphan files deleted.", table...)

	m.retentionRemoved = b.counter("meterstore.retention.removed", "{reference}",
		"Subject references whose link to a natural id a retention sweep destroyed, across the deployment.")
	m.retentionFailures = b.counter("meterstore.retention.failures", "{sweep}",
		"Retention sweeps that failed; the obligation they serve comes due regardless.")

	m.authFailures = b.counter("meterstore.http.auth_failures", "{request}",
		"HTTP requests refused for a missing or unknown bearer token (401) or one without the scope or table (403), Flight SQL calls and PostgreSQL logins alike, by protocol.", AttrReason, AttrProtocol)
	m.httpRequests = b.counter("meterstore.http.requests", "{request}",
		"HTTP requests the server answered, by route, method and status code.", AttrRoute, AttrMethod, AttrStatus)
	m.httpDuration = b.histogram("meterstore.http.request.duration", httpBuckets,
		"Duration of an HTTP request, from routing to the handler's return.", AttrRoute, AttrMethod, AttrStatus)

	if err := errors.Join(b.errs...); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return m, nil
}

// Sample records one measurement on every instrument, with each of its
// attributes set to "sample": what an exporter shows of each instrument
// once it has recorded anything. It is for the tests that hold the
// documentation to the exporter's names, not for a running store.
func (m *Metrics) Sample(ctx context.Context) {
	if m == nil {
		return
	}
	for _, f := range m.samples {
		f(ctx)
	}
}

// builder creates instruments and collects the errors of their creation.
type builder struct {
	meter metric.Meter
	m     *Metrics
	errs  []error
}

func (b *builder) check(name string, err error) {
	if err != nil {
		b.errs = append(b.errs, fmt.Errorf("create %s: %w", name, err))
	}
}

// sample returns the measurement option that sets every one of keys.
func sample(keys []string) metric.MeasurementOption {
	kvs := make([]attribute.KeyValue, len(keys))
	for i, k := range keys {
		kvs[i] = attribute.String(k, "sample")
	}
	return metric.WithAttributeSet(attribute.NewSet(kvs...))
}

func (b *builder) counter(name, unit, desc string, attrs ...string) metric.Int64Counter {
	c, err := b.meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	b.check(name, err)
	b.m.samples = append(b.m.samples, func(ctx context.Context) { c.Add(ctx, 1, sample(attrs)) })
	return c
}

func (b *builder) histogram(name string, buckets []float64, desc string, attrs ...string) metric.Float64Histogram {
	h, err := b.meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(buckets...))
	b.check(name, err)
	b.m.samples = append(b.m.samples, func(ctx context.Context) { h.Record(ctx, 1, sample(attrs)) })
	return h
}

func (b *builder) floatGauge(name, unit, desc string, attrs ...string) metric.Float64Gauge {
	g, err := b.meter.Float64Gauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
	b.check(name, err)
	b.m.samples = append(b.m.samples, func(ctx context.Context) { g.Record(ctx, 1, sample(attrs)) })
	return g
}

func (b *builder) intGauge(name, unit, desc string, attrs ...string) metric.Int64Gauge {
	g, err := b.meter.Int64Gauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
	b.check(name, err)
	b.m.samples = append(b.m.samples, func(ctx context.Context) { g.Record(ctx, 1, sample(attrs)) })
	return g
}
