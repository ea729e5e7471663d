// Package metrics defines the OpenTelemetry instruments of MeterStore and
// typed methods that record them.
//
// Instruments are created against the OpenTelemetry API only. The
// application decides where measurements go by passing a MeterProvider
// to New; with none, recording is a no-op. Nothing reads the global
// provider.
//
// Every instrument is named meterstore.<area>.<what> with a unit, so that
// the Prometheus exporter shows it as meterstore_<area>_<what>_<unit>
// (seconds, bytes, and _total after every counter). docs/metrics.md is
// the table of every instrument as /metrics shows it, with its type, unit,
// labels and meaning; a test holds it to what the exporter produces.
//
// Every instrument about a table carries the attribute table; the scan
// counter adds tier. The retention instruments carry none: a sweep
// destroys a subject's link across the whole deployment at once, so
// attributing it to a table would invite a sum that counts it twice. The
// log's compare-and-set latency carries backend and outcome, not table:
// every table shares the log, and its latency is the log's. The HTTP
// server's instruments carry the bounded attributes of the request
// (reason; route, method and status) and no table: a request may name
// none.
//
// Counters only go up, so the recording methods ignore a negative count
// or duration. Gauges record what they are given, including -1 for a
// value a status check could not compute: an alert on a gauge should
// treat a negative value as unhealthy, as system.tables does. A nil
// *Metrics records nothing, so callers need no branches.
package metrics
