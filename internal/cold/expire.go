package cold

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

// ReassertWatermark re-stamps the watermark onto the current snapshot when a
// foreign engine committed it, so that reading W no longer walks a parent
// chain a foreign expiry could cut. It republishes what the history says and
// cannot move the boundary. It reports whether it committed a snapshot: it
// does not when the current snapshot carries W already or the table has
// none.
func (c *Tier) ReassertWatermark(ctx context.Context, t *Table) (bool, error) {
	ice, err := c.load(ctx, t)
	if err != nil {
		return false, err
	}
	return c.reassert(ctx, t, ice)
}

func (c *Tier) reassert(ctx context.Context, t *Table, ice *table.Table) (bool, error) {
	meta := ice.Metadata()
	w, ok, err := Watermark(meta)
	if err != nil {
		return false, fmt.Errorf("cold: reassert the watermark of %s: %w", t.decl.Name, err)
	}
	cur := meta.CurrentSnapshot()
	if !ok || cur.Summary != nil && cur.Summary.Properties[SummaryWatermark] != "" {
		return false, nil
	}
	from := carrier(meta)
	_, err = c.commit(ctx, t, ice, write{
		op: "reassert the watermark of",
		summary: iceberg.Properties{
			SummaryWatermark:  FormatTime(w),
			SummaryReasserted: strconv.FormatInt(from, 10),
		},
	})
	if err != nil {
		return false, err
	}
	c.log.Info("cold: watermark re-stamped onto the current snapshot", "table", t.decl.Name, "watermark", FormatTime(w), "from_snapshot", from)
	return true, nil
}

// carrier returns the id of the snapshot Watermark found W in.
func carrier(meta table.Metadata) int64 {
	for s := meta.CurrentSnapshot(); s != nil; {
		if s.Summary != nil && s.Summary.Properties[SummaryWatermark] != "" {
			return s.SnapshotID
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return 0
}

// Defaults of Retention.
const (
	DefaultRetentionYears = 10
	DefaultKeepLast       = 100
)

// Retention says which snapshots ExpireSnapshots keeps. It is the only
// thing that does: the table's history.expire.* properties are ignored, so
// no table property, set by whatever tool, can shorten it.
type Retention struct {
	// MaxAge keeps every snapshot committed within it of now; zero means
	// DefaultRetentionYears calendar years.
	MaxAge time.Duration
	// KeepLast keeps that many of the newest snapshots of the current
	// history, however old; zero means DefaultKeepLast.
	KeepLast int
}

// An Expiry reports what ExpireSnapshots did.
type Expiry struct {
	Restamped bool    // the watermark was re-stamped first
	Expired   []int64 // the removed snapshots, ascending
	Kept      int     // snapshots left
	// RollupExpired counts the snapshots of the daily rollup removed
	// with them: those reflecting a snapshot removed.
	RollupExpired int
}

// ExpireSnapshots removes old snapshots from t's metadata. Snapshot expiry
// is a compliance decision, so nothing calls it on its own, and now is a
// parameter: a snapshot is what makes a past settlement reproducible.
//
// It first re-stamps the watermark onto the current snapshot (see
// ReassertWatermark), so no removed ancestor can strand it. It then keeps
// the snapshots retention asks for, every snapshot a branch or tag points
// at, and the whole history of every branch but main, and removes the rest
// in one commit that fails if the table moved meanwhile. Data files stay:
// the table is append-only, so the current snapshot references every one
// of them but those a compaction replaced, which Orphans deletes once no
// snapshot left references them. The manifest lists of removed snapshots
// stay too, for readers still planning against them.
func (c *Tier) ExpireSnapshots(ctx context.Context, t *Table, now time.Time, r Retention) (Expiry, error) {
	if r.KeepLast < 0 || r.MaxAge < 0 {
		return Expiry{}, fmt.Errorf("cold: expire snapshots of %s: negative retention", t.decl.Name)
	}
	if r.KeepLast == 0 {
		r.KeepLast = DefaultKeepLast
	}
	cutoff := now.AddDate(-DefaultRetentionYears, 0, 0)
	if r.MaxAge > 0 {
		cutoff = now.Add(-r.MaxAge)
	}
	ice, err := c.load(ctx, t)
	if err != nil {
		return Expiry{}, err
	}
	var out Expiry
	if out.Restamped, err = c.reassert(ctx, t, ice); err != nil {
		return Expiry{}, err
	}
	if out.Restamped {
		if ice, err = c.load(ctx, t); err != nil {
			return Expiry{}, err
		}
	}
	meta := ice.Metadata()
	expire := expirable(meta, cutoff, r.KeepLast)
	out.Kept = len(meta.Snapshots()) - len(expire)
	if len(expire) == 0 || meta.CurrentSnapshot() == nil {
		return out, nil
	}
	cur := meta.CurrentSnapshot().SnapshotID
	// A commit of our own, not iceberg-go's ExpireSnapshots: that one reads
	// history.expire.* and the wall clock, and deletes files after it.
	reqs := []table.Requirement{table.AssertTableUUID(meta.TableUUID()), table.AssertRefSnapshotID(table.MainBranch, &cur)}
	updates := []table.Update{table.NewRemoveSnapshotsUpdate(expire, false)}
	if _, _, err := c.cat.CommitTable(ctx, t.ident, reqs, updates); err != nil {
		return Expiry{}, fmt.Errorf("cold: expire %d snapshots of %s: %w", len(expire), t.decl.Name, err)
	}
	out.Expired = expire
	c.log.Info("cold: snapshots expired", "table", t.decl.Name, "expired", len(expire), "kept", out.Kept)
	// The rollup's snapshots of the snapshots gone follow them.
	if t.decl.TimeModel == series.Interval {
		after, err := c.load(ctx, t)
		if err == nil {
			out.RollupExpired, err = c.expireRollup(ctx, t, after.Metadata())
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// expirable returns the ids of the snapshots of meta that retention lets go.
func expirable(meta table.Metadata, cutoff time.Time, keepLast int) []int64 {
	keep := make(map[int64]bool)
	cut := cutoff.UnixMilli()
	lookup := func(id int64) *table.Snapshot { return meta.SnapshotByID(id) }
	for name, ref := range meta.Refs() {
		keep[ref.SnapshotID] = true
		if ref.SnapshotRefType != table.BranchRef {
			continue
		}
		n := 0
		for s := range ancestors(ref.SnapshotID, lookup) {
			// main keeps its newest keepLast and everything within the
			// retention; other branches are kept whole, being not ours.
			if name != table.MainBranch || n < keepLast || s.TimestampMs >= cut {
				keep[s.SnapshotID] = true
			}
			n++
		}
	}
	var out []int64
	for _, s := range meta.Snapshots() {
		if !keep[s.SnapshotID] && s.TimestampMs < cut {
			out = append(out, s.SnapshotID)
		}
	}
	slices.Sort(out)
	return out
}

// ancestors yields the snapshot id and its ancestors, newest first, until a
// parent is missing.
func ancestors(id int64, lookup func(int64) *table.Snapshot) func(func(*table.Snapshot) bool) {
	return func(yield func(*table.Snapshot) bool) {
		seen := make(map[int64]bool)
		for s := lookup(id); s != nil && !seen[s.SnapshotID]; {
			seen[s.SnapshotID] = true
			if !yield(s) || s.ParentSnapshotID == nil {
				return
			}
			s = lookup(*s.ParentSnapshotID)
		}
	}
}
