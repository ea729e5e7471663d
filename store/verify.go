package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A Verification is what Verify found of one table.
type Verification struct {
	Table string
	// SnapshotID is the current cold snapshot (0: none); DataFiles and
	// DataBytes are the data files it references and their size.
	SnapshotID   int64
	Watermark    time.Time
	HasWatermark bool
	DataFiles    int
	DataBytes    int64
	// AttachedPartitions and DetachedPartitions count the table's
	// partitions in PostgreSQL; of the detached, AwaitingDrop are covered
	// by the watermark and InFlight are archivals under way.
	AttachedPartitions, DetachedPartitions, AwaitingDrop, InFlight int
	// Problems describes every invariant violation found: a data file
	// missing or of another size than its manifest records, an attached
	// partition below the watermark, a detached partition that neither the
	// watermark covers nor an archival recorded.
	Problems []string
	// Err is why the table could not be verified, or verified only in
	// part.
	Err error
}

// OK reports whether the table was verified and nothing was found.
func (v Verification) OK() bool { return v.Err == nil && len(v.Problems) == 0 }

// Verify checks every table more deeply than Status: every data file the
// current snapshot references exists with the size its manifest records,
// and every partition in PostgreSQL is accounted for: an attached one at
// or above the watermark, a detached one covered by it (awaiting its drop)
// or recorded by the archival ledger as an archival under way. It reads
// no data file's contents and changes nothing. A missing file is otherwise
// noticed only by a query that needs it.
func (s *Store) Verify(ctx context.Context) []Verification {
	out := make([]Verification, len(s.tables))
	for i, t := range s.tables {
		v := Verification{Table: t.decl.Name}
		var errs []error
		fc, err := s.cold.VerifyFiles(ctx, t.cold)
		if err != nil {
			errs = append(errs, err)
		} else {
			v.SnapshotID, v.Watermark, v.HasWatermark = fc.SnapshotID, fc.Watermark, fc.HasWatermark
			v.DataFiles, v.DataBytes = fc.Files, fc.Bytes
			v.Problems = append(v.Problems, fc.Problems...)
		}
		pc, err := s.arch.CheckPartitions(ctx, t.decl, t.cold)
		if err != nil {
			errs = append(errs, err)
		} else {
			v.AttachedPartitions, v.DetachedPartitions = pc.Attached, pc.Detached
			v.AwaitingDrop, v.InFlight = pc.AwaitingDrop, pc.InFlight
			v.Problems = append(v.Problems, pc.Problems...)
		}
		if len(errs) > 0 {
			v.Err = fmt.Errorf("store: verify %s: %w", t.decl.Name, errors.Join(errs...))
		}
		out[i] = v
	}
	return out
}
