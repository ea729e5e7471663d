package archive

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/series"
)

// A partition attached below W is what a database restored from a backup
// older than the archivals since brings back: the rows of windows the cold
// tier holds by now. Queries never read them (they read PostgreSQL from W
// on), so they are not counted twice; they are reconciled instead of
// merely reported: each partition whose every row the cold tier holds,
// same key, version and value, is recorded as archived and detached, and
// reclaim drops it after the reader grace as it drops any archived
// partition. One holding a row the cold tier lacks is kept and reported:
// what the cold tier was told to hold by an archival cannot be less than
// what a backup taken before it held, so such a row is a violation an
// operator must look at, and nothing of it is dropped.

// reconcile reconciles the partitions of parts attached below w, adding
// what it did, or could not, to out.
func (a *Archiver) reconcile(ctx context.Context, t *series.Table, ct *cold.Table, w time.Time, parts []hot.Partition, now time.Time, out *Outcome) error {
	for _, p := range parts {
		if !p.Attached || p.To.After(w) {
			continue
		}
		rows, lacking, err := a.coldHolds(ctx, t, ct, p)
		if err != nil {
			return err
		}
		if lacking > 0 {
			out.Violations = append(out.Violations, fmt.Sprintf("partition %s [%s, %s) is attached below the watermark %s and holds %d of its %d rows that the cold tier does not: kept",
				p.Name, cold.FormatTime(p.From), cold.FormatTime(p.To), cold.FormatTime(w), lacking, rows))
			continue
		}
		// Recorded first: a crash before the detach leaves an attached
		// partition that the next cycle reconciles again; after it, an
		// archived one that reclaim drops.
		if err := a.ledger.archived(ctx, t.Name, []time.Time{p.From}, []int64{rows}, now); err != nil {
			return ledgerFailed(t.Name, err)
		}
		err = a.hot.Detach(ctx, t, p.From)
		if errors.Is(err, hot.ErrDeferred) {
			a.log.Info("archive: detach of a restored partition deferred", "table", t.Name, "partition", p.Name)
			continue
		}
		if err != nil {
			return fmt.Errorf("archive %s: %w", t.Name, err)
		}
		out.Reconciled = append(out.Reconciled, p.From)
		a.log.Warn("archive: a partition below the watermark, restored with the database from a backup older than its archival, holds only rows the cold tier holds: detached, dropped after the reader grace",
			"table", t.Name, "partition", p.Name, "rows", rows, "watermark", cold.FormatTime(w))
	}
	return nil
}

// coldHolds returns how many rows partition p holds and how many of them
// the cold tier does not hold with the same merge key, version and value.
// It keeps a hash of each cold row of p's range in memory: eight bytes a
// reading of the partition.
func (a *Archiver) coldHolds(ctx context.Context, t *series.Table, ct *cold.Table, p hot.Partition) (rows, lacking int64, err error) {
	held := map[uint64]bool{}
	for r, err := range a.cold.Scan(ctx, ct, series.Range{From: p.From, To: p.To}) {
		if err != nil {
			return 0, 0, cold.Unavailable("archive", t.Name, fmt.Errorf("archive %s: read the cold rows of partition %s: %w", t.Name, p.Name, err))
		}
		held[rowHash(t, &r)] = true
	}
	err = a.hot.ScanPartition(ctx, t, p, a.cfg.chunkRows(), func(rs []series.Reading) error {
		for i := range rs {
			rows++
			if !held[rowHash(t, &rs[i])] {
				lacking++
			}
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("archive %s: read partition %s: %w", t.Name, p.Name, err)
	}
	return rows, lacking, nil
}

// rowHash hashes what makes a reading the same in both tiers: its merge
// key, version and value.
func rowHash(t *series.Table, r *series.Reading) uint64 {
	h := fnv.New64a()
	var b [8]byte
	put := func(s string) {
		binary.LittleEndian.PutUint64(b[:], uint64(len(s)))
		h.Write(b[:])
		h.Write([]byte(s))
	}
	put(r.MaLo)
	put(r.OBIS)
	for _, c := range t.Identity() {
		put(r.Extra[c.Name])
	}
	for _, v := range []uint64{uint64(r.From.UnixMicro()), r.Version, uint64(r.Value)} {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	return h.Sum64()
}
