package httpapi

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/auth"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/metrics"
)

// An Exposition serves a Prometheus registry in the exposition format,
// whole to a token that may touch every table and, to one limited to
// tables, without the series of the others.
//
// What a limited token is shown: every series whose table label
// (metrics.AttrTable) names one of its tables, and every series without
// a table label: the process's (Go runtime, process, HTTP requests and
// refusals by route) and the deployment's aggregates that no table owns
// (compare-and-set latency by log backend, the retention sweep). Those
// are the process an operator limited to a table still runs, and they
// name no table. A series labelled with another table, or with the
// catalog's registry (metrics.RegistryTable, which names every table's
// creation), is left out, as if it did not exist.
type Exposition struct {
	g prometheus.Gatherer
}

// exposeOpts are the options of every exposition: a collector that fails
// does not take the others down with it.
var exposeOpts = promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}

// ServeHTTP serves the whole registry.
func (e *Exposition) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	promhttp.HandlerFor(e.g, exposeOpts).ServeHTTP(w, r)
}

// For returns the exposition token tok may see: the whole registry if it
// lists no tables, else the registry without the series of other tables.
func (e *Exposition) For(tok config.Token) http.Handler {
	if len(tok.Tables) == 0 {
		return e
	}
	keep := func(table string) bool { return auth.MayTouch(tok, table) }
	return promhttp.HandlerFor(prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		mfs, err := e.g.Gather()
		return onlyTables(mfs, keep), err
	}), exposeOpts)
}

// onlyTables returns mfs without the metrics whose table label keep
// refuses, and without the families left empty.
func onlyTables(mfs []*dto.MetricFamily, keep func(table string) bool) []*dto.MetricFamily {
	out := mfs[:0]
	for _, mf := range mfs {
		ms := mf.Metric[:0]
		for _, m := range mf.Metric {
			if kept(m, keep) {
				ms = append(ms, m)
			}
		}
		if len(ms) == 0 {
			continue
		}
		mf.Metric = ms
		out = append(out, mf)
	}
	return out
}

// kept reports whether m names no table or one keep keeps.
func kept(m *dto.Metric, keep func(table string) bool) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == metrics.AttrTable {
			return keep(l.GetValue())
		}
	}
	return true
}
