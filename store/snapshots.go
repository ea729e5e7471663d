package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	icetable "github.com/apache/iceberg-go/table"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/query"
)

// A Snapshot is one snapshot of a cold table and the watermark in force
// at it: its own, or that of the nearest ancestor carrying one.
type Snapshot struct {
	Table        string
	ID           int64
	CommittedAt  time.Time
	Operation    string
	Watermark    time.Time
	HasWatermark bool
}

// Snapshots lists the snapshots of table name, oldest first.
func (s *Store) Snapshots(ctx context.Context, name string) ([]Snapshot, error) {
	_, ct, _, err := s.opened(ctx, name)
	if err != nil {
		return nil, err
	}
	ice, err := s.cold.Iceberg(ctx, ct)
	if err != nil {
		return nil, fmt.Errorf("store: snapshots of %s: %w", name, err)
	}
	return snapshots(name, ice.Metadata()), nil
}

func snapshots(name string, meta icetable.Metadata) []Snapshot {
	var out []Snapshot
	for _, sn := range meta.Snapshots() {
		s := Snapshot{Table: name, ID: sn.SnapshotID, CommittedAt: time.UnixMilli(sn.TimestampMs).UTC()}
		if sn.Summary != nil {
			s.Operation = string(sn.Summary.Operation)
		}
		s.Watermark, s.HasWatermark = watermarkAt(meta, &sn)
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(a, b Snapshot) int { return a.CommittedAt.Compare(b.CommittedAt) })
	return out
}

// watermarkAt walks sn's parent chain to the nearest snapshot whose summary
// names a watermark; a chain that ends first has none.
func watermarkAt(meta icetable.Metadata, sn *icetable.Snapshot) (time.Time, bool) {
	for range len(meta.Snapshots()) + 1 {
		if sn == nil {
			return time.Time{}, false
		}
		if sn.Summary != nil {
			if v, ok := sn.Summary.Properties[cold.SummaryWatermark]; ok {
				if w, err := time.Parse(time.RFC3339Nano, v); err == nil {
					return w.UTC(), true
				}
			}
		}
		if sn.ParentSnapshotID == nil {
			return time.Time{}, false
		}
		sn = meta.SnapshotByID(*sn.ParentSnapshotID)
	}
	return time.Time{}, false
}

func (s *Store) snapshotsRelation(ctx context.Context) (query.Relation, error) {
	r := query.Relation{Schema: "system", Name: "snapshots", Columns: []query.Column{
		{Name: "table", Type: "VARCHAR"}, {Name: "snapshot_id", Type: "BIGINT"},
		{Name: "committed_at", Type: "TIMESTAMPTZ"}, {Name: "operation", Type: "VARCHAR"},
		{Name: "watermark", Type: "TIMESTAMPTZ"},
	}}
	var errs []error
	for _, t := range s.tables {
		snaps, err := s.Snapshots(ctx, t.decl.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, sn := range snaps {
			var w any
			if sn.HasWatermark {
				w = sn.Watermark
			}
			r.Rows = append(r.Rows, []any{sn.Table, sn.ID, sn.CommittedAt, sn.Operation, w})
		}
	}
	return r, errors.Join(errs...)
}
