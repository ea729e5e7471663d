package cold

import (
	"fmt"
	"iter"

	"github.com/meterstore/meterstore/series"
)

// Rows is a stream of readings. The Tier ranges over it once, possibly on
// a goroutine of the Tier's writer, and stops at the first error. A push
// iterator lets a source such as the hot tier's Scan stream rows from a
// server without holding them.
type Rows = iter.Seq2[series.Reading, error]

// Readings returns the readings of a slice as Rows.
func Readings(rs []series.Reading) Rows {
	return func(yield func(series.Reading, error) bool) {
		for _, r := range rs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// stateCheck reports why a reading read from the hot tier lacks what the
// hot tier derives at write time, or "": the transaction time, and the
// balancing day the one definition of a valid reading derives.
func stateCheck(r *series.Reading, d *series.Derived) string {
	switch {
	case r.RecordedAt.IsZero():
		return "recorded_at is not set"
	case r.BalancingDay != d.BalancingDay:
		return fmt.Sprintf("balancing_day %s, but from %s falls on %s", r.BalancingDay, FormatTime(r.From), d.BalancingDay)
	}
	return ""
}

// rowError returns the *hot.Error that refuses row i of a stream.
func rowError(kind series.Kind, op, table string, row int, reason string) error {
	return &series.Error{Kind: kind, Op: op, Table: table, Rows: []int{row}, Problems: []series.Problem{{Row: row, Reason: reason}}}
}
