package archive

import (
	"context"
	"fmt"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/series"
)

// A PartitionCheck is what CheckPartitions found of a table's partitions.
type PartitionCheck struct {
	Attached int // attached partitions
	// Detached counts the detached partitions, AwaitingDrop those of them
	// W covers and InFlight those an archival detached and has not
	// committed yet (the next cycle resumes them).
	Detached, AwaitingDrop, InFlight int
	// Problems describes each partition that breaks an invariant: an
	// attached one below W, a detached one W does not cover and that no
	// archival recorded, one kept after a failed check.
	Problems []string
}

// CheckPartitions accounts for every partition of t in PostgreSQL against
// the watermark of ct and the archival ledger, changing nothing and taking
// no lease. It reads the partitions, then W, then the ledger: an archival
// running meanwhile records a partition in the ledger before detaching it
// and forgets it only after dropping it below W, so it can make a
// partition look accounted for, never missing.
func (a *Archiver) CheckPartitions(ctx context.Context, t *series.Table, ct *cold.Table) (PartitionCheck, error) {
	var out PartitionCheck
	parts, err := a.hot.Partitions(ctx, t)
	if err != nil {
		return out, err
	}
	w, hasW, err := a.cold.Watermark(ctx, ct)
	if err != nil {
		return out, fmt.Errorf("archive %s: %w", t.Name, err)
	}
	recs, err := a.ledger.recordsIfAny(ctx, t.Name)
	if err != nil {
		return out, ledgerFailed(t.Name, err)
	}
	for _, p := range parts {
		covered := hasW && !p.To.After(w)
		rec, known := recs[p.From.Unix()]
		if p.Attached {
			out.Attached++
			if hasW && p.From.Before(w) {
				out.Problems = append(out.Problems, fmt.Sprintf("partition %s [%s, %s) is attached below the watermark %s",
					p.Name, cold.FormatTime(p.From), cold.FormatTime(p.To), cold.FormatTime(w)))
			}
			continue
		}
		out.Detached++
		switch {
		case known && rec.violation != nil:
			out.Problems = append(out.Problems, fmt.Sprintf("detached partition %s is kept after a failed check: %s", p.Name, *rec.violation))
		case covered:
			out.AwaitingDrop++
		case known && rec.archivedAt == nil:
			out.InFlight++
		case known:
			out.Problems = append(out.Problems, fmt.Sprintf("detached partition %s [%s, %s): the ledger records its archival at %s, but the watermark %s does not cover it",
				p.Name, cold.FormatTime(p.From), cold.FormatTime(p.To), cold.FormatTime(*rec.archivedAt), formatW(w, hasW)))
		default:
			out.Problems = append(out.Problems, fmt.Sprintf("detached partition %s [%s, %s) is neither covered by the watermark %s nor recorded by an archival: detached by hand?",
				p.Name, cold.FormatTime(p.From), cold.FormatTime(p.To), formatW(w, hasW)))
		}
	}
	return out, nil
}

// CheckDetached returns an *InvariantError for each detached partition of
// parts (t's partitions, as listed) that the watermark w does not cover
// (hasW false: none is covered) and that the archival ledger does not
// record as detached by an archival under way: a DETACH someone else ran,
// which the archiver reports and does not archive past. It changes nothing
// and takes no lease: parts must be listed before w is read, so that an
// archival running meanwhile (which records a partition before detaching
// it, and forgets it only after W covers it) is never taken for a stray.
func (a *Archiver) CheckDetached(ctx context.Context, t *series.Table, parts []hot.Partition, w time.Time, hasW bool) ([]error, error) {
	recs, err := a.ledger.recordsIfAny(ctx, t.Name)
	if err != nil {
		return nil, ledgerFailed(t.Name, err)
	}
	resume := resumable(recs)
	var out []error
	for _, p := range parts {
		if p.Attached || hasW && !p.To.After(w) || resume[p.From.Unix()] {
			continue
		}
		out = append(out, &InvariantError{Table: t.Name, Reason: strayReason(p, formatW(w, hasW))})
	}
	return out, nil
}

// formatW formats the watermark w, or says there is none.
func formatW(w time.Time, ok bool) string {
	if !ok {
		return "(none)"
	}
	return cold.FormatTime(w)
}
