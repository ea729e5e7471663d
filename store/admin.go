package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/series"
)

// Expiry reports what ExpireSnapshots did with one table. It is the cold
// tier's report field for field.
type Expiry struct {
	Restamped bool    // the watermark was re-stamped first
	Expired   []int64 // the removed snapshots, ascending
	Kept      int     // snapshots left
	// RollupExpired counts the snapshots of the table's daily rollup
	// removed with them: those reflecting a snapshot removed.
	RollupExpired int
}

// ExpireSnapshots removes the snapshots of table name that the configured
// retention no longer keeps, after re-stamping the watermark onto the
// current snapshot. It reclaims metadata, never readings. It runs under
// the table's archive lease, so no archival interleaves with it; while
// another session holds the lease it does nothing and its error wraps
// ErrLeaseHeld.
func (s *Store) ExpireSnapshots(ctx context.Context, name string, now time.Time) (Expiry, error) {
	_, ct, _, err := s.opened(ctx, name)
	if err != nil {
		return Expiry{}, err
	}
	// A now past the wall clock would expire snapshots still retained.
	if err := s.CheckNow(now); err != nil {
		return Expiry{}, err
	}
	var out Expiry
	err = s.arch.WithLease(ctx, name, func(ctx context.Context) error {
		if err := s.vetWatermark(ctx, name, ct); err != nil {
			return err
		}
		e, err := s.cold.ExpireSnapshots(ctx, ct, now, s.opts.Snapshots.retention())
		out = Expiry(e)
		return err
	})
	if err != nil {
		return Expiry{}, fmt.Errorf("store: expire snapshots of %s: %w", name, err)
	}
	return out, nil
}

// ReassertWatermark republishes table name's watermark on its current
// snapshot when a foreign engine committed that one; run it after
// out-of-band maintenance. It cannot move the watermark and reports
// whether it committed. Like ExpireSnapshots it runs under the table's
// archive lease, or fails with ErrLeaseHeld.
func (s *Store) ReassertWatermark(ctx context.Context, name string) (bool, error) {
	_, ct, _, err := s.opened(ctx, name)
	if err != nil {
		return false, err
	}
	var done bool
	err = s.arch.WithLease(ctx, name, func(ctx context.Context) error {
		if err := s.vetWatermark(ctx, name, ct); err != nil {
			return err
		}
		done, err = s.cold.ReassertWatermark(ctx, ct)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: reassert the watermark of %s: %w", name, err)
	}
	return done, nil
}

// vetWatermark refuses to commit to a cold table whose catalog shows a
// lower watermark than the archival ledger recorded: its log lost entries,
// and a commit would build on the shortened history.
func (s *Store) vetWatermark(ctx context.Context, name string, ct *cold.Table) error {
	_, _, err := s.arch.VetWatermark(ctx, name, func(ctx context.Context) (time.Time, bool, error) { return s.cold.Watermark(ctx, ct) })
	return err
}

// DefaultOrphanAge is the safety age of Orphans when OrphanOptions.OlderThan
// is zero: a day, far longer than any commit takes.
const DefaultOrphanAge = 24 * time.Hour

// OrphanOptions say how Orphans treats a table's unreferenced files.
type OrphanOptions struct {
	// OlderThan is the safety age: a file modified more recently, on the
	// wall clock, is kept, for it may belong to a commit under way. It
	// must exceed the longest commit (an archival writing its files
	// included); zero means DefaultOrphanAge.
	OlderThan time.Duration
	// Delete deletes the orphans; without it they are only listed.
	Delete bool
}

// OrphanReport is what Orphans found, and deleted, under a table's location.
type OrphanReport = cold.OrphanReport

// A KeptFile is a file Orphans keeps, with the reason (OrphanReport.Kept).
type KeptFile = cold.KeptFile

// Orphans lists the files under table name's Iceberg location, and its
// daily rollup's, that nothing references and that are older than the
// safety age, and with
// opts.Delete deletes them: metadata of commits that lost, files of
// failed archivals and foreign writes, manifest lists and metadata files
// snapshot expiry left. Every file a snapshot still in the metadata
// references stays, as does the catalog's own (see cold.Tier.Orphans).
// The age is measured on the wall clock (NowOptions.WallClock), not on a
// now parameter: the files' times are the storage's.
func (s *Store) Orphans(ctx context.Context, name string, opts OrphanOptions) (OrphanReport, error) {
	if opts.OlderThan < 0 {
		return OrphanReport{}, fmt.Errorf("store: orphan files of %s: negative safety age %s", name, opts.OlderThan)
	}
	t, ct, _, err := s.opened(ctx, name)
	if err != nil {
		return OrphanReport{}, err
	}
	age := opts.OlderThan
	if age == 0 {
		age = DefaultOrphanAge
	}
	co := cold.OrphanOptions{Before: s.opts.Now.wall().Add(-age), Delete: opts.Delete}
	r, err := s.cold.Orphans(ctx, ct, co)
	if err == nil {
		// The daily rollup's files are the table's too: a commit of it
		// cut short leaves them as the table's do.
		var rr OrphanReport
		rr, err = s.rollupOrphans(ctx, t, ct, co)
		r = addOrphans(r, rr)
	}
	if err == nil || len(r.Orphans) > 0 {
		s.metrics.Orphans(ctx, name, int64(len(r.Orphans)), r.Bytes(), int64(r.Deleted), r.DeletedBytes)
	}
	return r, err
}

// Purge destroys table name in both tiers: the PostgreSQL table with every
// partition, the Iceberg table and its files. It is the only operation
// that deletes stored readings and there is no way back, so confirm must
// repeat the name. PostgreSQL goes first, then the cold files, then the
// catalog entry (see cold.Tier.Purge); each step treats a missing table
// as done, so a purge cut short at any step is completed by running it
// again.
func (s *Store) Purge(ctx context.Context, name, confirm string) (files int, err error) {
	t, err := s.table(name)
	if err != nil {
		return 0, err
	}
	if confirm != name {
		return 0, fmt.Errorf("store: purge %s: %w", name, series.ErrNotConfirmed)
	}
	if err := s.hot.Purge(ctx, t.decl, confirm); err != nil {
		return 0, fmt.Errorf("store: purge %s: %w", name, err)
	}
	n, err := s.cold.Purge(ctx, name, confirm)
	if errors.Is(err, icecatalog.ErrNoSuchTable) {
		n, err = 0, nil
	}
	if err != nil {
		return n, err
	}
	s.router.Forget(name)
	if err := s.altered.Forget(ctx, name); err != nil {
		return n, err
	}
	return n, s.arch.ForgetWatermark(ctx, name)
}
