package query

import (
	"errors"
	"fmt"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
)

// ReadOptions choose what state of the tiers a query reads; the zero value
// reads the current state. See the package documentation, "Reproducible
// reads", for what each means.
type ReadOptions struct {
	// AsOfSnapshot, if not zero, reads as of that cold snapshot: the
	// answer a query committed then would have given.
	AsOfSnapshot int64
	// AsOf, if not zero and AsOfSnapshot is zero, reads as of the cold
	// snapshot that was current at AsOf.
	AsOf time.Time
	// KnownAt, if not zero, is a recorded_at ceiling: rows recorded after
	// it are invisible, in both tiers.
	KnownAt time.Time
	// Mode chooses the tiers read: both (ReadAuto, the zero value), the
	// cold tier alone (ReadHistorical) or the hot tier alone
	// (ReadOperational).
	Mode ReadMode
	// Now is the time the relation completeness judges which balancing
	// days are due at; zero means the clock.
	Now time.Time
}

// now returns Now, or the clock.
func (o ReadOptions) now() time.Time {
	if o.Now.IsZero() {
		return time.Now()
	}
	return o.Now
}

// ErrNoSnapshot is wrapped by the error of a read as of a snapshot the
// cold tier does not have (any more): an unknown or expired ID, or a time
// before the first snapshot that is kept.
var ErrNoSnapshot = cold.ErrNoSnapshot

func (o ReadOptions) asOf() bool { return o.AsOfSnapshot != 0 || !o.AsOf.IsZero() }

func (o ReadOptions) ref() cold.SnapshotRef {
	if o.AsOfSnapshot != 0 {
		return cold.SnapshotRef{ID: o.AsOfSnapshot}
	}
	return cold.SnapshotRef{At: o.AsOf}
}

func (o ReadOptions) check() error {
	if o.AsOfSnapshot < 0 {
		return fmt.Errorf("query: as of snapshot %d: %w", o.AsOfSnapshot, errors.New("not a snapshot id"))
	}
	if o.AsOfSnapshot != 0 && !o.AsOf.IsZero() {
		return errors.New("query: as of a snapshot and as of a time: choose one")
	}
	if o.Mode < ReadAuto || o.Mode > ReadOperational {
		return fmt.Errorf("query: read mode %d", o.Mode)
	}
	if o.Mode != ReadAuto && o.asOf() {
		return fmt.Errorf("query: a %s read reads the current state: no as of", o.Mode)
	}
	return nil
}

// earliest returns the earlier of two ceilings, a zero one being none.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// A ReadMode chooses which tiers a query reads.
type ReadMode int

const (
	// ReadAuto reads both tiers, split at the watermark: every row.
	ReadAuto ReadMode = iota
	// ReadHistorical reads the cold tier alone, with no PostgreSQL
	// connection at all: the rows below the watermark, as a settlement
	// re-run needs them while the database is down or busy. What is
	// checked in PostgreSQL (the watermark against the archival ledger,
	// the files against the record of altered ones) is not; a file's size
	// is. The rows at or above W are not seen.
	ReadHistorical
	// ReadOperational reads the hot tier alone, with no Iceberg round
	// trip: the rows of the attached partitions, at or above the hot
	// floor. The rows below it, archived or in flight, are not seen.
	ReadOperational
)

// String returns auto, historical or operational.
func (m ReadMode) String() string {
	switch m {
	case ReadHistorical:
		return "historical"
	case ReadOperational:
		return "operational"
	}
	return "auto"
}

// ParseReadMode returns the mode s names: auto (or ""), historical or
// operational.
func ParseReadMode(s string) (ReadMode, error) {
	switch s {
	case "", "auto":
		return ReadAuto, nil
	case "historical":
		return ReadHistorical, nil
	case "operational":
		return ReadOperational, nil
	}
	return ReadAuto, fmt.Errorf("query: read mode %q: want auto, historical or operational", s)
}
