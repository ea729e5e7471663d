package store

import (
	"testing"

	"github.com/meterstore/meterstore/internal/cold"
)

// TestCommitKind names each commit of the cold tier by the summary keys
// its writer leaves: an archival by its window, a compaction, a re-stamp
// (before an expiry, or by reassert), late corrections alone, and a
// foreign engine's commit as other.
func TestCommitKind(t *testing.T) {
	for _, tc := range []struct {
		summary map[string]string
		want    string
	}{
		{map[string]string{cold.SummaryWatermark: "x", cold.SummaryArchivedFrom: "a", cold.SummaryArchivedTo: "b", cold.SummaryRows: "96"}, CommitArchival},
		{map[string]string{cold.SummaryWatermark: "x", cold.SummaryArchivedTo: "b", cold.SummaryLateRows: "4"}, CommitArchival},
		{map[string]string{cold.SummaryWatermark: "x", cold.SummaryLateRows: "4"}, CommitLate},
		{map[string]string{cold.SummaryWatermark: "x", cold.SummaryCompacted: "3", cold.SummaryResettled: "1"}, CommitCompaction},
		{map[string]string{cold.SummaryWatermark: "x", cold.SummaryReasserted: "12345"}, CommitRestamp},
		{map[string]string{cold.SummaryWatermark: "x", cold.SummaryLateRows: "0"}, CommitOther},
		{map[string]string{"spark.app.id": "local-1"}, CommitOther},
	} {
		if got := commitKind(tc.summary); got != tc.want {
			t.Errorf("commitKind(%v) = %q, want %q", tc.summary, got, tc.want)
		}
	}
}
