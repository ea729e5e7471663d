package query

import (
	"context"
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
