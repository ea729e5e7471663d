package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/internal/cold"
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
	// watermark covers nor an archival recorded, a commit MeterStore did
	// not make in the table's metadata mirror (also in Forks).
	Problems []string
	// Forks are the commits MeterStore did not make found in the table's
	// Hadoop-layout metadata mirror; ResolveForks moves them aside.
	Forks []catalog.Fork
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
// or recorded by the archival ledger as an archival under way; and every
// file of the table's metadata mirror is MeterStore's (catalog.VerifyMirror).
// It reads no data file's contents and changes nothing. A missing file is
// otherwise noticed only by a query that needs it.
func (s *Store) Verify(ctx context.Context) []Verification {
	out := make([]Verification, len(s.tables))
	for i, t := range s.tables {
		v := Verification{Table: t.decl.Name}
		var errs []error
		fc, err := s.cold.VerifyFiles(ctx, t.cold, cold.VerifyOptions{})
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
		t.mu.Lock()
		ct := t.cold
		t.mu.Unlock()
		if mc := catalog.MirrorOf(s.opts.Catalog); mc != nil && ct != nil {
			var fe *catalog.ForkError
			err := mc.VerifyMirror(ctx, ct.Identifier())
			switch {
			case errors.As(err, &fe):
				v.Forks = fe.Forks
				for _, f := range fe.Forks {
					v.Problems = append(v.Problems, "a commit MeterStore did not make in the metadata mirror: "+f.String())
				}
			case err != nil:
				errs = append(errs, err)
			}
		}
		if len(errs) > 0 {
			v.Err = fmt.Errorf("store: verify %s: %w", t.decl.Name, errors.Join(errs...))
		}
		out[i] = v
	}
	return out
}

// ResolveForks moves the commits MeterStore did not make out of the
// metadata mirror of table name into metadata/forked/, and mirrors the
// log's head again (catalog.ResolveForks). It returns what it moved, for
// the operator's record; the foreign metadata and its data files are kept,
// and rows a foreign writer added reach MeterStore only by being written
// through it. A catalog that writes no mirror has nothing to resolve.
func (s *Store) ResolveForks(ctx context.Context, name string) ([]catalog.Fork, error) {
	_, ct, _, err := s.opened(ctx, name)
	if err != nil {
		return nil, err
	}
	mc := catalog.MirrorOf(s.opts.Catalog)
	if mc == nil {
		return nil, nil
	}
	forks, err := mc.ResolveForks(ctx, ct.Identifier())
	for _, f := range forks {
		s.log.Warn("store: moved a commit MeterStore did not make out of the metadata mirror",
			"table", name, "file", f.File, "snapshot", f.SnapshotID, "records", f.Records)
	}
	if err != nil {
		return forks, fmt.Errorf("store: resolve forks of %s: %w", name, err)
	}
	return forks, nil
}
