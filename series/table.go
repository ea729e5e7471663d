package series

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// A TimeModel says whether a row covers an interval or names an instant.
type TimeModel uint8

// The time models.
const (
	// Interval rows carry "from" and "to" and a resolution: load profiles,
	// daily and monthly values.
	Interval TimeModel = iota + 1
	// Point rows carry "from" only: register readings.
	Point
)

// String returns "interval" or "point".
func (m TimeModel) String() string {
	switch m {
	case Interval:
		return "interval"
	case Point:
		return "point"
	}
	return fmt.Sprintf("TimeModel(%d)", m)
}

// A Width is the span of one partition. Partitions are aligned to UTC, not
// to Berlin days: the Iceberg transforms day(from) and month(from) that the
// cold tier partitions by are UTC, so a hot partition is always a whole
// number of cold ones and an archival window ends on a partition boundary.
// A Berlin day therefore spans two daily partitions; nothing depends on it.
type Width uint8

// The partition widths.
const (
	Daily   Width = iota + 1 // [00:00Z, 00:00Z next day)
	Monthly                  // [1st 00:00Z, 1st 00:00Z next month)
)

// String returns "daily" or "monthly".
func (w Width) String() string {
	switch w {
	case Daily:
		return "daily"
	case Monthly:
		return "monthly"
	}
	return fmt.Sprintf("Width(%d)", w)
}

// Start returns the start of the partition containing t.
func (w Width) Start(t time.Time) time.Time {
	t = t.UTC()
	if w == Monthly {
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	// UTC days are whole multiples of 24 hours from the zero Time, so
	// truncating is the midnight time.Date would build, without the
	// calendar arithmetic that writes pay for every reading.
	return t.Truncate(24 * time.Hour)
}

// Next returns the start of the partition after the one starting at start.
func (w Width) Next(start time.Time) time.Time {
	if w == Monthly {
		return start.AddDate(0, 1, 0)
	}
	return start.AddDate(0, 0, 1)
}

// A ColumnType is the SQL type of an extra column.
type ColumnType uint8

// The types of extra columns.
const (
	Text   ColumnType = iota + 1 // text
	BigInt                       // bigint, given in Reading.Extra as decimal digits
)

// String returns "text" or "bigint", the column's SQL type.
func (c ColumnType) String() string {
	switch c {
	case Text:
		return "text"
	case BigInt:
		return "bigint"
	}
	return fmt.Sprintf("ColumnType(%d)", c)
}

// A Column is an extra column a table declares beyond the built-in ones.
type Column struct {
	Name string
	Type ColumnType // zero means Text
	// Identity columns belong to the merge key: they are required, and
	// readings that differ in them are different series.
	Identity bool
	// Values, if not empty, are the only values allowed (a CHECK IN).
	Values []string
}

// A Table declares a table of readings, the same in both tiers. Once it is
// declared, the key, the time model and the width are fixed; its extra
// columns may change as Evolve allows.
type Table struct {
	// Name is the table's name: a lowercase letter followed by lowercase
	// letters, digits and underscores, at most MaxNameLen bytes, so that
	// every name derived from it fits PostgreSQL's 63-byte identifiers.
	Name      string
	TimeModel TimeModel
	// Commodity is the Sparte of readings that do not name one; zero means
	// every reading must name its own.
	Commodity metering.Commodity
	// Resolutions lists the resolutions an Interval table accepts; empty
	// means all. Intervals must lie on the grid of their resolution, so in
	// a table of one resolution two intervals of a series overlap only if
	// they start together, which the primary key already governs: such a
	// table needs no overlap constraint and writes several times faster.
	Resolutions []metering.Resolution
	// Columns are the declared extra columns.
	Columns []Column
	// Width is the span of one partition.
	Width Width
	// Headroom is how far ahead of now EnsurePartitions keeps partitions.
	Headroom time.Duration
	// Integrity says how the hot tier enforces the rules between rows.
	// Fixed when the table is declared; zero lets the tier choose.
	Integrity Integrity
}

// An Integrity says how the hot tier enforces the rules that relate rows
// of a table to each other: one network operator per reading, and no
// overlapping intervals of a series within a version. Rules on a single
// row (check digits, codes, the interval grid) are CHECK constraints in
// every mode.
type Integrity uint8

// The ways of enforcing integrity.
const (
	// IntegrityAuto lets the hot tier choose: a declared table keeps the
	// way it was declared with; a new one gets IntegrityStatement where
	// its declaration allows it, IntegrityExclusion elsewhere.
	IntegrityAuto Integrity = iota
	// IntegrityExclusion has PostgreSQL enforce the rules for every
	// client with GiST exclusion constraints: an index probe per row.
	IntegrityExclusion
	// IntegrityStatement has PostgreSQL enforce the rules for every
	// client at the cost of a set operation per statement: the primary
	// key and the grid rule out overlaps, and each statement records the
	// spans it writes per series and network operator in a small
	// ownership relation whose exclusion constraint refuses a second
	// operator. Only for interval tables of one fixed resolution, where
	// that is exact (see StatementCapable).
	IntegrityStatement
	// IntegrityWrite leaves the rules between rows to Write, which
	// serializes writers per partition with advisory locks and checks
	// each batch against the stored rows. Rows written by other clients
	// are not checked against each other.
	IntegrityWrite
)

var integrityNames = []string{"auto", "exclusion", "statement", "write"}

// String returns "auto", "exclusion", "statement" or "write".
func (i Integrity) String() string {
	if int(i) < len(integrityNames) {
		return integrityNames[i]
	}
	return fmt.Sprintf("Integrity(%d)", i)
}

// ParseIntegrity parses the name String returns.
func ParseIntegrity(s string) (Integrity, error) {
	if i := slices.Index(integrityNames, s); i >= 0 {
		return Integrity(i), nil
	}
	return 0, fmt.Errorf("integrity %q: want one of %s", s, strings.Join(integrityNames, ", "))
}

// StatementCapable reports whether the table's declaration allows
// IntegrityStatement: an interval table of one resolution of fixed length,
// in which two intervals of a series overlap only if they start together
// and two spans of consecutive intervals share a reading whenever they
// overlap.
func (t *Table) StatementCapable() bool {
	rs := t.AcceptedResolutions()
	if t.TimeModel != Interval || len(rs) != 1 {
		return false
	}
	_, fixed := rs[0].Fixed()
	return fixed
}

// MaxNameLen is the longest table name, in bytes. The longest derived name,
// <name>_pYYYYMMDD_operator, must fit in 63 bytes, or PostgreSQL would
// silently truncate it and two names could collide.
const MaxNameLen = 63 - len("_pYYYYMMDD_operator")

var (
	namePattern      = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	partitionPattern = regexp.MustCompile(`_p[0-9]{8}$`)
)

// builtinColumns are the columns every table has, in table order. Interval
// tables add "to" after "from" and "resolution" after "quality".
var builtinColumns = []string{
	"malo_id", "melo_id", "obis_code", "sparte", "from", "to", "value", "unit",
	"quality", "resolution", "version", "version_scope", "recorded_at",
	"balancing_day", "subject_id",
}

// ColumnSuperseded is the column of the cold tier that marks, at archival,
// the versions a later version of the same merge key supersedes. No
// declared column may take its name.
const ColumnSuperseded = "superseded"

// maxColumnLen is the longest extra column name: <column>_check must fit.
const maxColumnLen = 63 - len("_check")

// reservedNames are names no table may take: the hot tier's own metadata
// table, and the schemas of a query's session (system relations, DuckDB's
// own, the tiers'), where a table's relations would clash as
// <table>.readings or as a Flight SQL db_schema.
var reservedNames = []string{"hot_tables", "system", "main", "temp", "tiers", "pg_catalog", "information_schema"}

// Validate reports whether t is a complete, consistent declaration. The
// error is an *Error of kind InvalidConfig.
func (t *Table) Validate() error {
	bad := func(format string, args ...any) error {
		return &Error{Kind: InvalidConfig, Op: "declare", Table: t.Name, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case !namePattern.MatchString(t.Name):
		return bad("table name %q: want a lowercase letter, then lowercase letters, digits and underscores", t.Name)
	case len(t.Name) > MaxNameLen:
		return bad("table name is %d bytes; at most %d fit, so that its partitions' names are not truncated at 63 bytes", len(t.Name), MaxNameLen)
	case partitionPattern.MatchString(t.Name):
		return bad("table name ends like a partition name (_pYYYYMMDD)")
	case slices.Contains(reservedNames, t.Name):
		return bad("table name %q is reserved", t.Name)
	case t.TimeModel != Interval && t.TimeModel != Point:
		return bad("time model not set: want Interval or Point")
	case t.Width != Daily && t.Width != Monthly:
		return bad("partition width not set: want Daily or Monthly")
	case t.Headroom < 0:
		return bad("negative headroom %v", t.Headroom)
	case t.Commodity != 0 && !t.Commodity.Valid():
		return bad("unknown commodity %d", t.Commodity)
	case t.TimeModel == Point && len(t.Resolutions) > 0:
		return bad("a point table has no resolutions")
	case t.Integrity > IntegrityWrite:
		return bad("unknown integrity %d", t.Integrity)
	case t.Integrity == IntegrityStatement && !t.StatementCapable():
		return bad("integrity %q needs an interval table of one resolution of fixed length (quarter hours, say); use %q", IntegrityStatement, IntegrityExclusion)
	}
	for _, r := range t.Resolutions {
		if !r.Valid() {
			return bad("unknown resolution %d", r)
		}
	}
	seen := map[string]bool{}
	for _, c := range t.Columns {
		switch {
		case !namePattern.MatchString(c.Name) || len(c.Name) > maxColumnLen:
			return bad("column name %q: want a lowercase letter, then lowercase letters, digits and underscores, at most %d bytes", c.Name, maxColumnLen)
		case slices.Contains(builtinColumns, c.Name):
			return bad("column %q is built in", c.Name)
		case c.Name == ColumnSuperseded:
			return bad("column %q is reserved: the cold tier marks superseded versions in it", c.Name)
		case c.Provenance() && (c.Identity || c.ColumnType() != Text || len(c.Values) > 0):
			return bad("column %q records provenance: declare it as a text attribute column without values", c.Name)
		case seen[c.Name]:
			return bad("column %q declared twice", c.Name)
		case c.Type > BigInt:
			return bad("column %q: unknown type %d", c.Name, c.Type)
		}
		seen[c.Name] = true
		for _, v := range c.Values {
			if err := c.Check(v); err != nil {
				return bad("column %q: coded value %s: %v", c.Name, shownValue(v), err)
			}
		}
	}
	return nil
}

// AcceptedResolutions returns the resolutions an Interval table accepts,
// finest first: the declared ones, or all when none are declared.
func (t *Table) AcceptedResolutions() []metering.Resolution {
	if t.TimeModel == Point {
		return nil
	}
	if len(t.Resolutions) == 0 {
		return []metering.Resolution{metering.FiveMinutes, metering.QuarterHour, metering.HalfHour,
			metering.Hour, metering.Day, metering.Month, metering.Year}
	}
	rs := slices.Clone(t.Resolutions)
	slices.Sort(rs)
	return slices.Compact(rs)
}

// Identity returns the identity columns, in declaration order.
func (t *Table) Identity() []Column {
	var cs []Column
	for _, c := range t.Columns {
		if c.Identity {
			cs = append(cs, c)
		}
	}
	return cs
}

// MergeKey returns the merge key's columns: the primary key without version.
func (t *Table) MergeKey() []string {
	k := []string{"malo_id", "obis_code", "from"}
	for _, c := range t.Identity() {
		k = append(k, c.Name)
	}
	return k
}

// ColumnType returns the column's type, Text when it is not set.
func (c Column) ColumnType() ColumnType {
	if c.Type == 0 {
		return Text
	}
	return c.Type
}

// Check reports whether v is a value the column accepts: not empty, a
// bigint in canonical form for a BigInt column, text without NUL in UTF-8
// for a Text column, plain text of at most MaxAttributionLen bytes for an
// attribution column (CheckAttribution), one of Values if declared.
func (c Column) Check(v string) error {
	if v == "" {
		return fmt.Errorf("empty value (leave the column out for NULL)")
	}
	if c.Attribution() {
		if err := CheckAttribution(v); err != nil {
			return err
		}
	} else if c.ColumnType() == Text {
		if err := checkText(v); err != nil {
			return err
		}
	}
	if c.ColumnType() == BigInt {
		// One spelling per number: the value may be part of a key.
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || strconv.FormatInt(n, 10) != v {
			return fmt.Errorf("not a bigint in canonical form")
		}
	}
	if len(c.Values) > 0 && !slices.Contains(c.Values, v) {
		return fmt.Errorf("not one of %s", strings.Join(c.Values, ", "))
	}
	return nil
}
