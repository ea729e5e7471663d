package store

import (
	"context"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/consensus"
	"github.com/meterstore/meterstore/internal/metrics"
)

// logMeter records the compare-and-sets of a catalog's log in m, under
// the log's backend. m may be set after the catalog is opened, as long as
// that is before anything commits: OpenConfig learns the meters from its
// options, which run once the catalog exists.
type logMeter struct {
	backend string
	m       *metrics.Metrics
}

// observe is the catalog's CASEvent observer.
func (l *logMeter) observe(ctx context.Context, e catalog.CASEvent) {
	table := metrics.RegistryTable
	if len(e.Table) > 0 {
		table = e.Table[len(e.Table)-1] // the namespace is the deployment's
	}
	l.m.CompareAndSet(ctx, l.backend, table, casOutcome(e), e.Duration)
}

// casOutcome classifies a compare-and-set as the outcome attribute does.
func casOutcome(e catalog.CASEvent) string {
	switch {
	case e.Err == nil && e.Result == consensus.Committed:
		return metrics.CASCommitted
	case e.Err == nil && e.Result == consensus.ExpectationMismatch:
		return metrics.CASMismatch
	case consensus.IsRetryable(e.Err):
		return metrics.CASTransient
	case consensus.IsIndeterminate(e.Err):
		return metrics.CASIndeterminate
	}
	return metrics.CASError
}

// backendOf returns the backend attribute of a catalog log option.
func backendOf(log string) string {
	if log == LogObjectStore {
		return metrics.BackendObjectStore
	}
	return metrics.BackendPostgres
}
