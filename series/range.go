package series

import "time"

// A Range selects readings: by From within [From, To), a zero bound being
// open, and optionally by market location and OBIS code. Tiering routes on
// From, so its bounds prune partitions and data files.
type Range struct {
	From, To time.Time
	// MaLo, if not nil, are the only market locations selected.
	MaLo []string
	// OBIS, if not nil, are the only OBIS codes selected.
	OBIS []string
}

// Empty reports whether the range holds no time at all.
func (r Range) Empty() bool { return !r.From.IsZero() && !r.To.IsZero() && !r.From.Before(r.To) }
