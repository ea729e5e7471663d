package httpapi

import (
	"time"

	"github.com/meterstore/meterstore/store"
)

// StatusBody is the body of GET /v1/status, which meterstore status
// --format json prints as well.
type StatusBody struct {
	Now     time.Time     `json:"now"`
	Healthy bool          `json:"healthy"`
	Tables  []TableStatus `json:"tables"`
}

// TableStatus is one table of a StatusBody, a row of system.tables.
type TableStatus struct {
	Table               string     `json:"table"`
	Watermark           *time.Time `json:"watermark"` // null before the first archival
	WatermarkLagSeconds *float64   `json:"watermark_lag_seconds"`
	// WatermarkSource is "catalog", or "ledger" when the cold tier could
	// not be read and Watermark is the one the archival ledger recorded.
	WatermarkSource     string `json:"watermark_source,omitempty"`
	HotPartitions       int64  `json:"hot_partitions"`
	PartitionsAhead     int64  `json:"partitions_ahead"`
	InvariantViolations int64  `json:"invariant_violations"`
	Healthy             bool   `json:"healthy"`
	Error               string `json:"error,omitempty"`
}

// NewStatusBody returns the body for the statuses sts at now, of the
// tables include admits (nil: all).
func NewStatusBody(now time.Time, sts []store.TableStatus, include func(table string) bool) StatusBody {
	body := StatusBody{Now: now.UTC(), Healthy: true, Tables: []TableStatus{}}
	for _, st := range sts {
		if include != nil && !include(st.Table) {
			continue
		}
		ts := TableStatus{
			Table: st.Table, HotPartitions: st.HotPartitions, PartitionsAhead: st.PartitionsAhead,
			InvariantViolations: st.InvariantViolations, Healthy: st.Healthy,
		}
		if st.HasWatermark {
			wm, lag := st.Watermark.UTC(), st.WatermarkLag.Seconds()
			ts.Watermark, ts.WatermarkLagSeconds, ts.WatermarkSource = &wm, &lag, "catalog"
			if st.WatermarkFromLedger {
				ts.WatermarkSource = "ledger"
			}
		}
		if st.Err != nil {
			ts.Error = st.Err.Error()
		}
		body.Healthy = body.Healthy && st.Healthy
		body.Tables = append(body.Tables, ts)
	}
	return body
}
