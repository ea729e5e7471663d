package query

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/meterstore/meterstore/series"
)

// A statement run by one table's Engine may read other declared tables
// too, named as <table>.readings and <table>.readings_versions: each is
// read with its own Source, split at its own W, into relations of its own
// in the query's session. The tables are read one after the other, each as
// a single-table query reads its own (see the package documentation); no
// snapshot spans two tables, whose watermarks move independently, and
// Header.Tables reports each one's.

// A Lookup finds the Engine of another declared table: ok is false if no
// table of that name is declared, and an error says that it is declared
// but cannot be read now, such as a table that cannot be opened.
type Lookup func(ctx context.Context, name string) (e *Engine, ok bool, err error)

// SetTables lets every later query read the other tables lookup finds.
// Without it, a statement naming another table's relations is refused
// with ErrInvalidQuery. It is safe for concurrent use with Query.
func (e *Engine) SetTables(lookup Lookup) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lookup = lookup
}

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

// own sets the header's fields of the engine's own table from tr, and
// lists it first.
func (h *Header) own(tr TableRead) {
	h.Watermark, h.HasWatermark, h.Tiers = tr.Watermark, tr.HasWatermark, tr.Tiers
	h.Snapshot, h.AsOf, h.SnapshotAt, h.Ceiling = tr.Snapshot, tr.AsOf, tr.SnapshotAt, tr.Ceiling
	h.Tables = append([]TableRead{tr}, h.Tables...)
}

// reservedSchemas are schemas of a query's session that a table of that
// name cannot take for its relations.
var reservedSchemas = []string{"main", "temp", "tiers", "pg_catalog", "information_schema"}

// another is another table a statement reads, and its range.
type another struct {
	name   string
	engine *Engine
	r      series.Range
}

// others returns the other tables of ranges, by name. A name that is no
// declared table is an invalid statement; so is one whose relations would
// clash with the session's own schemas.
func (e *Engine) others(ctx context.Context, ranges map[string]series.Range) ([]another, error) {
	if len(ranges) == 0 {
		return nil, nil
	}
	var out []another
	for name, r := range ranges {
		o, err := e.other(ctx, name)
		if err != nil {
			return nil, err
		}
		out = append(out, another{name: name, engine: o, r: r})
	}
	slices.SortFunc(out, func(a, b another) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// other returns the engine of the declared table name, which may be e's
// own. A name that is no declared table is an invalid statement; so is
// one whose relations would clash with the session's own schemas.
func (e *Engine) other(ctx context.Context, name string) (*Engine, error) {
	if slices.Contains(reservedSchemas, name) {
		return nil, fmt.Errorf("%w: %s.readings: a table named %s cannot be read from another table's statement", ErrInvalidQuery, name, name)
	}
	e.mu.RLock()
	lookup := e.lookup
	e.mu.RUnlock()
	var (
		o   *Engine
		ok  bool
		err error
	)
	if lookup != nil {
		o, ok, err = lookup(ctx, name)
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("query: table %s: %w", name, err)
	case !ok:
		return nil, fmt.Errorf("%w: %s.readings: no table %s is declared", ErrInvalidQuery, name, name)
	}
	return o, nil
}

// createAlias makes the engine's own table's relations rels reachable by
// its name too, as <table>.readings, for a statement that names them so.
func createAlias(ctx context.Context, conn *sql.Conn, name string, rels []string) error {
	if slices.Contains(reservedSchemas, name) {
		return nil
	}
	stmts := []string{`CREATE SCHEMA IF NOT EXISTS ` + database + `.` + ident(name)}
	for _, r := range rels {
		stmts = append(stmts, `CREATE VIEW `+database+`.`+rel(name, r)+` AS SELECT * FROM `+database+`.main.`+ident(r))
	}
	for _, stmt := range stmts {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("query: name the table %s: %w", name, err)
		}
	}
	return nil
}
