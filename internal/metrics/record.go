package metrics

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Archived records one archived window of table: rows readings moved to
// the cold tier in d.
func (m *Metrics) Archived(ctx context.Context, table string, rows int64, d time.Duration) {
	if m == nil {
		return
	}
	attrs := tableAttr(table)
	if rows >= 0 {
		m.archivedRows.Add(ctx, rows, attrs)
	}
	if d >= 0 {
		m.archivalDuration.Record(ctx, d.Seconds(), attrs)
	}
}

// Deferred records an archival cycle of table that gave up waiting for a
// lock and changed nothing.
func (m *Metrics) Deferred(ctx context.Context, table string) {
	if m == nil {
		return
	}
	m.deferred.Add(ctx, 1, tableAttr(table))
}

// LeaseContended records an archival cycle of table that stopped because
// another replica held the archive lease.
func (m *Metrics) LeaseContended(ctx context.Context, table string) {
	if m == nil {
		return
	}
	m.leaseContended.Add(ctx, 1, tableAttr(table))
}

// ArchivalFailed records an archival cycle of table that failed, or found
// the table quarantined, for reason: FailureQuarantine or another Failure
// value.
func (m *Metrics) ArchivalFailed(ctx context.Context, table, reason string) {
	if m == nil {
		return
	}
	m.archivalFailures.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(
		attribute.String(AttrTable, table), attribute.String(AttrReason, reason))))
}

// PartitionsDropped records n detached partitions of table that an
// archival cycle dropped.
func (m *Metrics) PartitionsDropped(ctx context.Context, table string, n int64) {
	if m == nil || n <= 0 {
		return
	}
	m.partitionsDropped.Add(ctx, n, tableAttr(table))
}

// Watermark records how far the watermark of table trails now.
func (m *Metrics) Watermark(ctx context.Context, table string, lag time.Duration) {
	if m == nil {
		return
	}
	m.watermarkLag.Record(ctx, lag.Seconds(), tableAttr(table))
}

// PartitionsAhead records the number of attached partitions of table that
// can still take a reading from now on; -1 if they could not be listed.
func (m *Metrics) PartitionsAhead(ctx context.Context, table string, n int64) {
	if m == nil {
		return
	}
	m.partitionsAhead.Record(ctx, n, tableAttr(table))
}

// InvariantViolations records the number of invariant violations a status
// check found in table; -1 if the check could not run. It is a gauge, not
// a counter: a violation persists until an operator resolves it and is
// seen again by every check, so what matters is how many there are now,
// and an alert fires on any value other than zero.
func (m *Metrics) InvariantViolations(ctx context.Context, table string, n int64) {
	if m == nil {
		return
	}
	m.violations.Record(ctx, n, tableAttr(table))
}

// MirrorForks records the number of foreign files (commits MeterStore did
// not make) a status check found in table's metadata mirror; -1 if the
// check could not run. Like InvariantViolations it is a gauge: a fork
// stays until an operator resolves it.
func (m *Metrics) MirrorForks(ctx context.Context, table string, n int64) {
	if m == nil {
		return
	}
	m.mirrorForks.Record(ctx, n, tableAttr(table))
}

// Healthy records whether a status check found table healthy.
func (m *Metrics) Healthy(ctx context.Context, table string, healthy bool) {
	if m == nil {
		return
	}
	var v int64
	if healthy {
		v = 1
	}
	m.healthy.Record(ctx, v, tableAttr(table))
}

// Written records a write to table: inserted readings stored and
// duplicates found already stored and skipped.
func (m *Metrics) Written(ctx context.Context, table string, inserted, duplicates int64) {
	if m == nil {
		return
	}
	attrs := tableAttr(table)
	if inserted >= 0 {
		m.writtenRows.Add(ctx, inserted, attrs)
	}
	if duplicates >= 0 {
		m.duplicates.Add(ctx, duplicates, attrs)
	}
}

// WriteOutcomes records n readings of a write to table whose outcome was
// outcome, a series.Status name such as "superseded".
func (m *Metrics) WriteOutcomes(ctx context.Context, table, outcome string, n int64) {
	if m == nil || n <= 0 {
		return
	}
	m.writeOutcomes.Add(ctx, n, metric.WithAttributeSet(attribute.NewSet(
		attribute.String(AttrTable, table), attribute.String(AttrOutcome, outcome))))
}

// LateCorrections records n readings of a write to table that lay below
// the watermark and went to the cold tier.
func (m *Metrics) LateCorrections(ctx context.Context, table string, n int64) {
	if m == nil || n < 0 {
		return
	}
	m.lateCorrections.Add(ctx, n, tableAttr(table))
}

// Scanned records rows readings of table read from tier, TierHot or
// TierCold.
func (m *Metrics) Scanned(ctx context.Context, table, tier string, rows int64) {
	if m == nil || rows < 0 {
		return
	}
	m.scannedRows.Add(ctx, rows, metric.WithAttributeSet(attribute.NewSet(
		attribute.String(AttrTable, table), attribute.String(AttrTier, tier))))
}

// FooterCache records a lookup in the typed series reads' footer cache,
// a hit or not, and the files and bytes the cache holds after it.
func (m *Metrics) FooterCache(ctx context.Context, hit bool, files, bytes int64) {
	if m == nil {
		return
	}
	m.footerLookups.Add(ctx, 1, lookupOutcome(hit))
	m.footerFiles.Record(ctx, files)
	m.footerBytes.Record(ctx, bytes)
}

// CopyLookup records a lookup of the local copy of a remote data file:
// hit, or copied.
func (m *Metrics) CopyLookup(ctx context.Context, hit bool) {
	if m == nil {
		return
	}
	m.copyLookups.Add(ctx, 1, lookupOutcome(hit))
}

// lookupOutcome is the outcome attribute of a cache lookup.
func lookupOutcome(hit bool) metric.MeasurementOption {
	outcome := CacheMiss
	if hit {
		outcome = CacheHit
	}
	return metric.WithAttributeSet(attribute.NewSet(attribute.String(AttrOutcome, outcome)))
}

// CopiesTrimmed records what a new copy left: the copies' bytes, and how
// many were removed to keep the bound.
func (m *Metrics) CopiesTrimmed(ctx context.Context, kept int64, removed int) {
	if m == nil {
		return
	}
	m.copyBytes.Record(ctx, kept)
	if removed > 0 {
		m.copiesRemoved.Add(ctx, int64(removed))
	}
}

// Queried records a query of table that took d.
func (m *Metrics) Queried(ctx context.Context, table string, d time.Duration) {
	if m == nil || d < 0 {
		return
	}
	m.queryDuration.Record(ctx, d.Seconds(), tableAttr(table))
}

// CompareAndSet records a compare-and-set on the log of backend
// (BackendPostgres or BackendObjectStore) for table (RegistryTable for the
// catalog's registry) that ended with outcome, a CAS value, after d. A
// CASMismatch is counted apart too, by table: it is the race a writer of
// the table lost.
func (m *Metrics) CompareAndSet(ctx context.Context, backend, table, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	if d >= 0 {
		m.casDuration.Record(ctx, d.Seconds(), metric.WithAttributeSet(attribute.NewSet(
			attribute.String(AttrBackend, backend), attribute.String(AttrOutcome, outcome))))
	}
	if outcome == CASMismatch {
		m.casMismatches.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(
			attribute.String(AttrBackend, backend), attribute.String(AttrTable, table))))
	}
}

// Compacted records a compaction of table that ended with outcome, a
// Compaction value; one that committed (CompactionCompacted) also records
// the data files and bytes it replaced and wrote.
func (m *Metrics) Compacted(ctx context.Context, table, outcome string, rewritten, rewrittenBytes, written, writtenBytes int64) {
	if m == nil {
		return
	}
	m.compactions.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(
		attribute.String(AttrTable, table), attribute.String(AttrOutcome, outcome))))
	if outcome != CompactionCompacted {
		return
	}
	attrs := tableAttr(table)
	for _, c := range []struct {
		counter metric.Int64Counter
		n       int64
	}{{m.compactRewritten, rewritten}, {m.compactRewrittenSize, rewrittenBytes}, {m.compactWritten, written}, {m.compactWrittenSize, writtenBytes}} {
		if c.n > 0 {
			c.counter.Add(ctx, c.n, attrs)
		}
	}
}

// Orphans records an orphan run over table: the orphan files it found and
// their size, and of them the files it deleted and their size.
func (m *Metrics) Orphans(ctx context.Context, table string, found, foundBytes, removed, removedBytes int64) {
	if m == nil {
		return
	}
	attrs := tableAttr(table)
	m.orphansFound.Record(ctx, found, attrs)
	m.orphansFoundSize.Record(ctx, foundBytes, attrs)
	if removed > 0 {
		m.orphansRemoved.Add(ctx, removed, attrs)
	}
	if removedBytes > 0 {
		m.orphansRemovedSize.Add(ctx, removedBytes, attrs)
	}
}

// RetentionFailed records a retention sweep that failed. Like
// RetentionRemoved it carries no table.
func (m *Metrics) RetentionFailed(ctx context.Context) {
	if m == nil {
		return
	}
	m.retentionFailures.Add(ctx, 1)
}

// RetentionRemoved records n subject references a retention sweep
// removed. It carries no table: one sweep destroys links across the whole
// deployment.
func (m *Metrics) RetentionRemoved(ctx context.Context, n int64) {
	if m == nil || n < 0 {
		return
	}
	m.retentionRemoved.Add(ctx, n)
}

// AuthFailure records an HTTP request refused for reason: ReasonMissing,
// ReasonInvalid or ReasonForbidden.
func (m *Metrics) AuthFailure(ctx context.Context, reason string) {
	m.AuthFailureVia(ctx, ProtocolHTTP, reason)
}

// AuthFailureVia records a request of protocol (ProtocolHTTP and the
// other Protocol values) refused for reason.
func (m *Metrics) AuthFailureVia(ctx context.Context, protocol, reason string) {
	if m == nil {
		return
	}
	m.authFailures.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(
		attribute.String(AttrReason, reason), attribute.String(AttrProtocol, protocol))))
}

// HTTPRequest records an HTTP request that route (the pattern that took
// it, "" for none) answered with status after d. A method other than the
// standard ones is recorded as MethodOther, so that a client cannot grow
// the number of series.
func (m *Metrics) HTTPRequest(ctx context.Context, route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	if route == "" {
		route = RouteUnmatched
	}
	switch method {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE":
	default:
		method = MethodOther
	}
	attrs := metric.WithAttributeSet(attribute.NewSet(attribute.String(AttrRoute, route),
		attribute.String(AttrMethod, method), attribute.Int(AttrStatus, status)))
	m.httpRequests.Add(ctx, 1, attrs)
	if d >= 0 {
		m.httpDuration.Record(ctx, d.Seconds(), attrs)
	}
}

// tableAttr returns the measurement option carrying the table attribute.
func tableAttr(table string) metric.MeasurementOption {
	return metric.WithAttributeSet(attribute.NewSet(attribute.String(AttrTable, table)))
}
