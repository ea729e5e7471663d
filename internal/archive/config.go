package archive

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/meterstore/meterstore/series"
)

// Defaults of Config.
const (
	DefaultMaxWindowsPerCycle = 31
	DefaultChunkRows          = 4_096
)

// day is the width of a daily partition, the narrowest there is.
const day = 24 * time.Hour

// longestMonth is the span a step must reach for a monthly table, so that
// every window holds at least one whole month.
const longestMonth = 31 * day

// Config configures an Archiver.
type Config struct {
	// SettlementLag is how long after its end a window is still being
	// corrected; it is archived only afterwards.
	SettlementLag time.Duration
	// Step is the span of one archival window: a whole number of days, and
	// for monthly tables at least 31 days (a window then holds the whole
	// months that fit in it).
	Step time.Duration
	// MaxWindowsPerCycle bounds the windows one cycle archives; zero means
	// DefaultMaxWindowsPerCycle.
	MaxWindowsPerCycle int
	// ReaderGrace is how long a detached partition is kept after the commit
	// that covered it, for readers that planned against the old watermark.
	ReaderGrace time.Duration
	// ChunkRows is the number of rows fetched from a detached partition at
	// a time; zero means DefaultChunkRows.
	ChunkRows int
	// Logger receives a line per window archived, partition dropped and
	// problem found; nil discards them.
	Logger *slog.Logger
}

// Validate reports whether the settings are consistent on their own.
// A settlement lag shorter than the step is an error: a window would close
// while corrections for it still arrive.
func (c Config) Validate() error {
	var errs []error
	if c.Step <= 0 || c.Step%day != 0 {
		errs = append(errs, fmt.Errorf("archival step %v: want a positive whole number of days", c.Step))
	}
	if c.SettlementLag < c.Step {
		errs = append(errs, fmt.Errorf("settlement lag %v is shorter than the archival step %v", c.SettlementLag, c.Step))
	}
	if c.ReaderGrace < 0 {
		errs = append(errs, fmt.Errorf("negative reader grace %v", c.ReaderGrace))
	}
	if c.MaxWindowsPerCycle < 0 {
		errs = append(errs, fmt.Errorf("negative windows per cycle %d", c.MaxWindowsPerCycle))
	}
	if c.ChunkRows < 0 {
		errs = append(errs, fmt.Errorf("negative chunk size %d", c.ChunkRows))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("archive: invalid configuration: %w", err)
	}
	return nil
}

// ValidateFor reports whether the settings are consistent and fit tables
// of partition width w: archival windows end on partition boundaries.
func (c Config) ValidateFor(w series.Width) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if w == series.Monthly && c.Step < longestMonth {
		return fmt.Errorf("archive: invalid configuration: archival step %v is shorter than a month, the partition width", c.Step)
	}
	return nil
}

// MaxWindows returns MaxWindowsPerCycle or its default.
func (c Config) MaxWindows() int {
	if c.MaxWindowsPerCycle == 0 {
		return DefaultMaxWindowsPerCycle
	}
	return c.MaxWindowsPerCycle
}

func (c Config) chunkRows() int {
	if c.ChunkRows == 0 {
		return DefaultChunkRows
	}
	return c.ChunkRows
}
