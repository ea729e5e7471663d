package query

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/meterstore/meterstore/series"
)

// A statement reads every declared table the same way: each table it
// names is read with its own Source, split at its own W, into relations in
// the schema of its name (power.readings, power.completeness), and the
// default table's schema is searched first, so that an unqualified
// readings is the default table's. The tables are read one after the
// other, each as the package documentation says; no snapshot spans two
// tables, whose watermarks move independently, and Header.Tables reports
// each one's.

// A TableRead says how a query read one table's tiers; see Header for
// what each field means.
type TableRead struct {
	Name         string
	Watermark    time.Time
	HasWatermark bool
	Tiers        []string
	Snapshot     int64
	AsOf         bool
	SnapshotAt   time.Time
	Ceiling      time.Time
	Range        series.Range
	// Mode is the tiers the table was read in; in a historical or
	// operational read, Unseen is the range of "from" it could not see
	// (its zero bounds open), if HasUnseen: at or above W, or below the
	// hot floor.
	Mode      ReadMode
	Unseen    series.Range
	HasUnseen bool
	// Timing has the time its hot copy and cold planning took.
	Timing Timing
}

// first sets the header's fields of the default table from tr, its read.
func (h *Header) first(tr TableRead) {
	h.Watermark, h.HasWatermark, h.Tiers = tr.Watermark, tr.HasWatermark, tr.Tiers
	h.Snapshot, h.AsOf, h.SnapshotAt, h.Ceiling = tr.Snapshot, tr.AsOf, tr.SnapshotAt, tr.Ceiling
}

// reservedSchemas are schemas of a query's session that a table of that
// name cannot take for its relations.
var reservedSchemas = []string{"main", "temp", "tiers", "pg_catalog", "information_schema"}

// A use is one table a statement reads, and how.
type use struct {
	name string
	t    *Table
	r    series.Range
	// versions: it reads readings_versions (completeness does).
	versions bool
	// daily and completeness: it reads those relations; dailyOnly: daily
	// once and nothing else of the table; days bound completeness.
	daily, dailyOnly, completeness bool
	days                           dayRange
}

// table returns the declared table name. A name that is no declared table
// is an invalid statement; so is one whose relations would clash with the
// session's own schemas.
func (e *Engine) table(ctx context.Context, name string) (*Table, error) {
	if slices.Contains(reservedSchemas, name) {
		return nil, fmt.Errorf("%w: %s.readings: a table named %s cannot be read by a statement", ErrInvalidQuery, name, name)
	}
	if !slices.Contains(e.tables.Names, name) {
		return nil, fmt.Errorf("%w: %s.readings: no table %s is declared", ErrInvalidQuery, name, name)
	}
	t, err := e.tables.Open(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("query: table %s: %w", name, err)
	}
	return t, nil
}

// A reader reads one table's tiers for a statement of an engine.
type reader struct {
	*Table
	set Settings
}
