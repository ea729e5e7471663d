package hot

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// A Reading is one row of a hot table: a value of a market location, an OBIS
// code and an interval (or instant), under a version.
//
// Identifiers are strings as delivered, because Write is where a batch is
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

// A Decimal is a value with six decimal places, counted in millionths: the
// numeric(18,6) of the table, exactly. Its magnitude is below 10^12.
type Decimal int64

// MaxDecimal is the largest magnitude numeric(18,6) holds, in millionths.
const MaxDecimal Decimal = 999_999_999_999_999_999

// ParseDecimal parses a decimal number with at most six decimal places,
// such as "-12.5" or "0.000001". Exponents and more places are refused
// rather than rounded: a metered value is not ours to round.
func ParseDecimal(s string) (Decimal, error) {
	in := s
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	ip, fp, dot := strings.Cut(s, ".")
	if ip == "" && fp == "" || dot && fp == "" || len(fp) > 6 || !digits(ip) || !digits(fp) || len(ip) > 12 {
		return 0, fmt.Errorf("hot: decimal %q: want at most 12 digits, optionally a point and at most 6 more", in)
	}
	fp += strings.Repeat("0", 6-len(fp))
	n, _ := strconv.ParseInt(ip+fp, 10, 64) // at most 18 digits: cannot overflow
	if neg {
		n = -n
	}
	return Decimal(n), nil
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// String formats d with six decimal places, as PostgreSQL does.
func (d Decimal) String() string {
	a := uint64(d)
	sign := ""
	if d < 0 {
		a, sign = uint64(-d), "-"
	}
	return fmt.Sprintf("%s%d.%06d", sign, a/1_000_000, a%1_000_000)
}

// A Status says what Write did with one row.
type Status uint8

// The row statuses.
const (
	// Inserted rows were new and are now stored.
	Inserted Status = iota + 1
	// Present rows were stored already, identically, or repeat an earlier
	// row of the same batch: redelivery is a no-op.
	Present
)

// String returns "inserted" or "present".
func (s Status) String() string {
	switch s {
	case Inserted:
		return "inserted"
	case Present:
		return "present"
	}
	return fmt.Sprintf("Status(%d)", s)
}

// A Result reports the outcome of a successful Write.
type Result struct {
	Status   []Status // one per row of the batch, in order
	Inserted int      // rows with status Inserted
	Present  int      // rows with status Present
}
