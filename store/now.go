package store

import (
	"context"
	"fmt"
	"time"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/archive"
)

// DefaultMaxClockSkew is how far past the wall clock a now may lie when
// NowOptions.MaxClockSkew is zero.
const DefaultMaxClockSkew = 24 * time.Hour

// NowOptions bound the now that archival, maintenance, partition creation,
// snapshot expiry and status accept. The clock is a parameter, so that a
// test or a backfill can act at another time; but a now far past the wall
// clock would archive windows that are still being written and move the
// watermark where it can never come back from.
type NowOptions struct {
	// MaxClockSkew is how far past the wall clock a now may lie
	// (maintenance.max_clock_skew); zero means DefaultMaxClockSkew.
	MaxClockSkew time.Duration
	// WallClock reads the wall clock; nil means time.Now.
	WallClock func() time.Time
}

func (o NowOptions) skew() time.Duration {
	if o.MaxClockSkew <= 0 {
		return DefaultMaxClockSkew
	}
	return o.MaxClockSkew
}

func (o NowOptions) wall() time.Time {
	if o.WallClock == nil {
		return time.Now()
	}
	return o.WallClock()
}

// unixEpoch is the earliest now accepted: no reading is older.
var unixEpoch = time.Unix(0, 0).UTC()

// CheckNow reports whether now can be the time: not before 1970 and not
// past the wall clock plus the clock skew. The refusal wraps
// ErrNowOutOfRange and is permanent. Every call that takes a now checks
// it, and, where a table's watermark is at hand, that now is not before
// it; CheckNow lets a caller refuse a bad now before it does anything.
func (s *Store) CheckNow(now time.Time) error {
	if now.Before(unixEpoch) {
		return fmt.Errorf("store: %w: %s is before 1970-01-01", ErrNowOutOfRange, fmtTime(now))
	}
	wall, skew := s.opts.Now.wall(), s.opts.Now.skew()
	if now.After(wall.Add(skew)) {
		return fmt.Errorf("store: %w: %s is after the wall clock %s plus maintenance.max_clock_skew %s",
			ErrNowOutOfRange, fmtTime(now), fmtTime(wall), config.Duration(skew))
	}
	return nil
}

// checkNowFor checks now as CheckNow does, and that it is not before the
// watermark of t: the newest archived window was archived at least the
// settlement lag after its end, so a now before it cannot be the time.
// A watermark that cannot be read refuses nothing: partitions ahead must
// still be made while the cold tier is away, and what reads the
// watermark next reports the failure.
func (s *Store) checkNowFor(ctx context.Context, t *table, now time.Time) error {
	if err := s.CheckNow(now); err != nil {
		return err
	}
	w, ok, err := s.cold.Watermark(ctx, t.cold)
	if err == nil && ok {
		return beforeWatermark(t.decl.Name, now, w)
	}
	return nil
}

// beforeWatermark refuses a now before the watermark w of table name.
func beforeWatermark(name string, now, w time.Time) error {
	if now.Before(w) {
		return fmt.Errorf("store: %s: %w: %s is before the watermark %s, where the newest archived window ends",
			name, ErrNowOutOfRange, fmtTime(now), fmtTime(w))
	}
	return nil
}

func fmtTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ErrNowOutOfRange is wrapped by the refusal of a now that cannot be the
// time; see CheckNow. It is not retryable.
var ErrNowOutOfRange = archive.ErrNowOutOfRange
