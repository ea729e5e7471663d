package cold

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

// ErrNoSnapshot is wrapped by the error of a plan as of a snapshot the table
// does not have in its current history: never committed, expired, on no
// ancestor of the current snapshot, or, by time, none committed yet then.
var ErrNoSnapshot = errors.New("no such snapshot in the table's history")

// A SnapshotRef names a past snapshot of a table: by ID or, when ID is
// zero, the one that was current at At, the newest ancestor of the current
// snapshot committed at or before At.
type SnapshotRef struct {
	ID int64
	At time.Time
}

// PlanAt returns the plan of t for the readings q selects as Plan does, but
// of the snapshot ref names rather than the current one: its files, its
// watermark and its commit time. Data files are immutable and a snapshot
// keeps its files until it is expired, so the plan of a snapshot is the
// same whenever it is made.
func (c *Tier) PlanAt(ctx context.Context, t *Table, q series.Range, ref SnapshotRef) (Plan, error) {
	if ref.ID == 0 && ref.At.IsZero() {
		return Plan{}, fmt.Errorf("cold: plan %s: a snapshot reference needs an id or a time", t.decl.Name)
	}
	ice, err := c.load(ctx, t)
	if err != nil {
		return Plan{}, err
	}
	snap, err := snapshotOf(ice.Metadata(), ref)
	if err != nil {
		return Plan{}, fmt.Errorf("cold: plan %s: %w", t.decl.Name, err)
	}
	return c.planOf(ctx, t, ice, snap, q)
}

// snapshotOf finds the snapshot ref names among the ancestors of meta's
// current snapshot, the current one included: the snapshots that were
// current once.
func snapshotOf(meta table.Metadata, ref SnapshotRef) (*table.Snapshot, error) {
	s := meta.CurrentSnapshot()
	// A parent chain is acyclic; the bound only guards against metadata
	// that says otherwise.
	for range len(meta.Snapshots()) + 1 {
		if s == nil {
			break
		}
		if ref.ID != 0 && s.SnapshotID == ref.ID {
			return s, nil
		}
		if ref.ID == 0 {
			at, err := committed(s)
			if err != nil {
				return nil, err
			}
			if !at.After(ref.At) {
				return s, nil
			}
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	if ref.ID != 0 {
		return nil, fmt.Errorf("%w: snapshot %d", ErrNoSnapshot, ref.ID)
	}
	return nil, fmt.Errorf("%w: none committed at or before %s", ErrNoSnapshot, FormatTime(ref.At))
}

// committed returns when s was committed: its SummaryKnownAt, or the last
// microsecond of the millisecond of its Iceberg timestamp, the nearest a
// snapshot without it tells.
func committed(s *table.Snapshot) (time.Time, error) {
	if s.Summary != nil {
		if v, ok := s.Summary.Properties[SummaryKnownAt]; ok {
			t, err := parseTime(v)
			if err != nil {
				return time.Time{}, fmt.Errorf("snapshot %d: %s %q: %w", s.SnapshotID, SummaryKnownAt, v, err)
			}
			return t, nil
		}
	}
	return time.UnixMilli(s.TimestampMs).UTC().Add(time.Millisecond - time.Microsecond), nil
}
