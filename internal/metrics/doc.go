// Package metrics defines the OpenTelemetry instruments of MeterStore and
// typed methods that record them.
//
// Instruments are created against the OpenTelemetry API only. The
// application decides where measurements go by passing a MeterProvider
// to New; with none, recording is a no-op. Nothing reads the global
// provider.
//
// Every instrument carries the attribute table, and the scan counter adds
// tier ("hot" or "cold"). The retention counter carries neither: a sweep
// destroys a subject's link across the whole deployment at once, so
// attributing it to a table would invite a sum that counts it twice. The
// HTTP server's refusals carry reason ("missing", "invalid" or
// "forbidden") and no table: a refused request may name none. The HTTP
// server's requests carry route (the pattern that took the request,
// "unmatched" for none), method (one of the standard methods, else
// "_OTHER") and status (the response's status code), a bounded set.
//
//	name                                unit         kind       attributes
//	meterstore.archival.rows            {reading}    counter    table
//	meterstore.archival.duration        s            histogram  table
//	meterstore.archival.deferred        {cycle}      counter    table
//	meterstore.archival.lease_contended {cycle}      counter    table
//	meterstore.watermark.lag            s            gauge      table
//	meterstore.partitions.ahead         {partition}  gauge      table
//	meterstore.invariant.violations     {violation}  gauge      table
//	meterstore.mirror.forks             {file}       gauge      table
//	meterstore.write.rows               {reading}    counter    table
//	meterstore.write.duplicates         {reading}    counter    table
//	meterstore.write.late_corrections   {reading}    counter    table
//	meterstore.query.duration           s            histogram  table
//	meterstore.scan.rows                {reading}    counter    table, tier
//	meterstore.retention.removed        {reference}  counter    (none)
//	meterstore.http.auth_failures       {request}    counter    reason
//	meterstore.http.requests            {request}    counter    route, method, status
//	meterstore.http.request.duration    s            histogram  route, method, status
//
// Counters only go up, so the recording methods ignore a negative count
// or duration. Gauges record what they are given, including -1 for a
// value a status check could not compute: an alert on a gauge should
// treat a negative value as unhealthy, as system.tables does. A nil
// *Metrics records nothing, so callers need no branches.
package metrics
