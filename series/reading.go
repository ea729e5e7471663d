package series

import (
	"strings"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// A Reading is one row of a table: a value of a market location, an OBIS
// code and an interval (or instant), under a version.
//
// Identifiers are strings as delivered, because a write is where a batch is
// checked and a bad row must be named rather than lost in a parser upstream.
type Reading struct {
	MaLo string // market location id, 11 digits with a check digit
	MeLo string // metering location id, 33 characters; empty if none
	OBIS string // OBIS code in canonical form, such as "1-1:1.29.0"
	// Commodity is the Sparte; zero means the table's default.
	Commodity metering.Commodity
	// From and To bound the interval [From, To), at microsecond precision.
	// A point table's readings leave To zero.
	From, To   time.Time
	Value      Decimal
	Unit       metering.Unit
	Quality    metering.Quality
	Resolution metering.Resolution // zero in point tables
	// Version orders the deliveries of one reading; the highest wins.
	// MSCONS versions are timestamps of 14 digits or more; an unversioned
	// delivery is given its arrival time in milliseconds by the caller.
	// numeric(20,0) in the table; a uint64 holds every version up to
	// 18446744073709551615, and the table refuses larger ones.
	Version uint64
	// VersionScope is the network operator id, a colon, and the balancing
	// month (YYYY-MM) within which versions are compared.
	VersionScope string
	// Subject is an optional pseudonymous reference to the data subject.
	Subject string
	// Extra holds the declared extra columns by name. Identity columns are
	// required; an absent attribute column is NULL.
	Extra map[string]string

	// RecordedAt is the transaction time of the write, set by the database.
	// Write ignores it; Scan fills it in.
	RecordedAt time.Time
	// BalancingDay is the day the reading is settled on: the Berlin day of
	// From, or the gas day for gas. Write computes it; Scan fills it in.
	BalancingDay metering.Date
}

// NetworkOperator returns the part of VersionScope before the colon.
func (r *Reading) NetworkOperator() string {
	op, _, _ := strings.Cut(r.VersionScope, ":")
	return op
}
