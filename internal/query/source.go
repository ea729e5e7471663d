package query

import (
	"context"
	"errors"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/series"
)

// A Source gives an Engine the two tiers of one table. Its methods must be
// safe for concurrent use. A zero bound of a range is open.
type Source interface {
	// Watermark returns W (ok=false: nothing archived yet). It reads the
	// cold tier.
	Watermark(ctx context.Context) (w time.Time, ok bool, err error)
	// Hot streams the rows in PostgreSQL that q selects, from the attached
	// partitions, in one snapshot.
	Hot(ctx context.Context, q series.Range, fn func(series.Reading) error) error
	// HotFloor tells where the hot tier's attached partitions vouch for
	// its rows; see Floor. The engine reads it after the hot scan, to make
	// sure that no partition the scan needed was detached before it, and
	// when the cold tier is unreachable, to answer from the hot tier alone.
	HotFloor(ctx context.Context) (Floor, error)
	// Cold plans the cold files for the readings q selects: W of the
	// planned snapshot and local Parquet paths (see cold.Plan.Local).
	Cold(ctx context.Context, q series.Range) (cold.Plan, error)
	// ColdAt plans the cold files for q as Cold does, but in the past
	// snapshot ref names (see cold.Tier.PlanAt); an unknown one is an
	// error wrapping ErrNoSnapshot.
	ColdAt(ctx context.Context, q series.Range, ref cold.SnapshotRef) (cold.Plan, error)
}

// A Floor describes the hot tier's partitions for Source.HotFloor.
type Floor struct {
	// Detached is the end of the highest detached partition, the zero time
	// if none is detached: every hot row at or above it is in an attached
	// partition. Partitions are dropped only after their commit, so rows at
	// or above W that the hot scan missed are below Detached.
	Detached time.Time
	// Attached is the start of the lowest attached partition above every
	// detached one, if HasAttached: every row at or above it is in
	// PostgreSQL and none in the cold tier, whose rows all lie below W,
	// which lies at or below every attached partition. Without the cold
	// tier, only a range at or above it can be answered.
	Attached    time.Time
	HasAttached bool
}

// HotTier is what a TableSource reads of the hot tier; the hot tier's Tier
// provides it.
type HotTier interface {
	// Scan streams the rows of t in attached partitions that q selects.
	Scan(ctx context.Context, t *series.Table, q series.Range, fn func(series.Reading) error) error
	// Floor returns where t's attached partitions vouch for its rows:
	// Floor.Detached and Floor.Attached, zero for none.
	Floor(ctx context.Context, t *series.Table) (detached, attached time.Time, err error)
}

// A TableSource is the Source of a declared table: its rows in the hot
// tier and its files in the cold tier.
type TableSource struct {
	HotTier   HotTier
	ColdTier  *cold.Tier
	Table     *series.Table
	ColdTable *cold.Table
	// CacheDir holds the local copies of a remote warehouse's files.
	CacheDir string
	// Scanned, if set, is told the rows each hot scan returned.
	Scanned func(ctx context.Context, rows int64)
	// VetWatermark, if set, reads every watermark of the cold tier with
	// read, of the current snapshot and of a planned one, and vets it (the
	// archival ledger first, then read); an error fails the read as if the
	// cold tier were unreachable.
	VetWatermark func(ctx context.Context, read func(context.Context) (time.Time, bool, error)) (time.Time, bool, error)
	// VetPlan, if set, vets every cold plan, current or past, before a
	// file of it is read: it refuses one holding a file known not to be
	// the one its commit recorded (an error wrapping cold.ErrAltered).
	VetPlan func(ctx context.Context, p cold.Plan) error
	// CheckDigests reads every planned file whole before a query reads
	// it, and compares its SHA-256 with the digest its commit recorded
	// (see cold.Plan.CheckDigests): an altered file of the same size is
	// then refused too, at the cost of reading every file twice.
	CheckDigests bool
	// Altered, if set, is told of a planned file found, as it was made
	// local, not to be the one its commit recorded (its size differs from
	// the manifest's, or with CheckDigests its SHA-256); the read fails
	// with that error all the same.
	Altered func(ctx context.Context, err *cold.AlteredFileError)
}

var _ Source = (*TableSource)(nil)

// Watermark returns the cold table's W.
func (s *TableSource) Watermark(ctx context.Context) (time.Time, bool, error) {
	read := func(ctx context.Context) (time.Time, bool, error) { return s.ColdTier.Watermark(ctx, s.ColdTable) }
	if s.VetWatermark == nil {
		return read(ctx)
	}
	w, ok, err := s.VetWatermark(ctx, read)
	if err != nil {
		return time.Time{}, false, err
	}
	return w, ok, nil
}

// Hot streams the hot rows q selects.
func (s *TableSource) Hot(ctx context.Context, q series.Range, fn func(series.Reading) error) error {
	var n int64
	err := s.HotTier.Scan(ctx, s.Table, q, func(r series.Reading) error {
		n++
		return fn(r)
	})
	if s.Scanned != nil {
		s.Scanned(ctx, n)
	}
	return err
}

// HotFloor returns the hot tier's Floor.
func (s *TableSource) HotFloor(ctx context.Context) (Floor, error) {
	detached, attached, err := s.HotTier.Floor(ctx, s.Table)
	if err != nil {
		return Floor{}, err
	}
	return Floor{Detached: detached, Attached: attached, HasAttached: !attached.IsZero()}, nil
}

// Cold plans the cold files q selects, vets them and makes them local.
func (s *TableSource) Cold(ctx context.Context, q series.Range) (cold.Plan, error) {
	var p cold.Plan
	plan := func(ctx context.Context) (time.Time, bool, error) {
		var err error
		p, err = s.ColdTier.Plan(ctx, s.ColdTable, q)
		return p.Watermark, p.HasWatermark, err
	}
	var err error
	if s.VetWatermark == nil {
		_, _, err = plan(ctx)
	} else {
		_, _, err = s.VetWatermark(ctx, plan)
	}
	if err != nil {
		return cold.Plan{}, err
	}
	return s.local(ctx, p)
}

// ColdAt plans the cold files q selects in the snapshot ref names, vets
// them and makes them local. VetWatermark does not vet its watermark: a
// past W lies below the current one by nature.
func (s *TableSource) ColdAt(ctx context.Context, q series.Range, ref cold.SnapshotRef) (cold.Plan, error) {
	p, err := s.ColdTier.PlanAt(ctx, s.ColdTable, q, ref)
	if err != nil {
		return cold.Plan{}, err
	}
	return s.local(ctx, p)
}

// local vets p with VetPlan and makes its files local, telling Altered of a
// file found altered meanwhile.
func (s *TableSource) local(ctx context.Context, p cold.Plan) (cold.Plan, error) {
	if s.VetPlan != nil && len(p.Files) > 0 {
		if err := s.VetPlan(ctx, p); err != nil {
			return cold.Plan{}, err
		}
	}
	lp, err := p.Local(ctx, s.CacheDir)
	if err == nil && s.CheckDigests {
		err = p.CheckDigests(ctx, lp)
	}
	var altered *cold.AlteredFileError
	if errors.As(err, &altered) && s.Altered != nil {
		s.Altered(ctx, altered)
	}
	return lp, err
}
