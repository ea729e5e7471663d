package cold

import (
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"time"

	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/metering"
)

// Rows is a stream of readings. The Tier ranges over it once, possibly on
// a goroutine of iceberg-go's writer, and stops at the first error. A push
// iterator lets a source such as the hot tier's Scan stream rows from a
// server without holding them.
type Rows = iter.Seq2[hot.Reading, error]

// Readings returns the readings of a slice as Rows.
func Readings(rs []hot.Reading) Rows {
	return func(yield func(hot.Reading, error) bool) {
		for _, r := range rs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// errStop ends a callback scan that FromScan's consumer no longer reads.
var errStop = errors.New("cold: stop")

// FromScan returns the readings of a callback scan as Rows. scan calls fn
// for every reading and returns fn's first error, as the hot tier's Scan
// does, so that
//
//	cold.FromScan(func(fn func(hot.Reading) error) error { return h.Scan(ctx, t, q, fn) })
//
// streams a hot partition into Archive.
func FromScan(scan func(fn func(hot.Reading) error) error) Rows {
	return func(yield func(hot.Reading, error) bool) {
		err := scan(func(r hot.Reading) error {
			if !yield(r, nil) {
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			yield(hot.Reading{}, err)
		}
	}
}

// validCode reports whether v is a defined value of its code type: its
// canonical spelling parses back to it.
func validCode[T ~uint8](v T, parse func(string) (T, error)) bool {
	w, err := parse(fmt.Sprint(v))
	return v != 0 && err == nil && w == v
}

// codes knows the defined values of the code types, so that checking a row
// formats and parses no code.
type codes struct {
	commodity, unit, quality, resolution [256]bool
}

func newCodes() *codes {
	var c codes
	for i := 1; i < 256; i++ {
		c.commodity[i] = validCode(metering.Commodity(i), metering.ParseCommodity)
		c.unit[i] = validCode(metering.Unit(i), metering.ParseUnit)
		c.quality[i] = validCode(metering.Quality(i), metering.ParseQuality)
		c.resolution[i] = validCode(metering.Resolution(i), metering.ParseResolution)
	}
	return &c
}

// commodity returns the reading's commodity, or the table's default.
func commodity(t *hot.Table, r *hot.Reading) metering.Commodity {
	if r.Commodity == 0 {
		return t.Commodity
	}
	return r.Commodity
}

// invalid returns why the cold tier cannot store r, or "". The hot tier has
// checked rows it archives; late corrections come from elsewhere, and a row
// the cold tier stores is not corrected later, so every row is checked.
func (c *codes) invalid(t *hot.Table, r *hot.Reading) string {
	if m, err := metering.ParseMaLo(r.MaLo); err != nil || m.String() != r.MaLo {
		return fmt.Sprintf("malo_id %q: %v", r.MaLo, errOr(err, "not canonical"))
	}
	if r.MeLo != "" {
		if m, err := metering.ParseMeLo(r.MeLo); err != nil || m.String() != r.MeLo {
			return fmt.Sprintf("melo_id %q: %v", r.MeLo, errOr(err, "not canonical"))
		}
	}
	if o, err := metering.ParseOBIS(r.OBIS); err != nil || o.String() != r.OBIS {
		return fmt.Sprintf("obis_code %q: %v", r.OBIS, errOr(err, "not canonical"))
	}
	if !c.commodity[commodity(t, r)] {
		return "no commodity: neither the reading nor the table names one"
	}
	switch {
	case r.From.IsZero():
		return "from is not set"
	case !r.From.Truncate(time.Microsecond).Equal(r.From):
		return "from is finer than a microsecond"
	case r.Value > hot.MaxDecimal || r.Value < -hot.MaxDecimal:
		return fmt.Sprintf("value %s does not fit numeric(18,6)", r.Value)
	case !c.unit[r.Unit]:
		return fmt.Sprintf("unknown unit %d", r.Unit)
	case !c.quality[r.Quality]:
		return fmt.Sprintf("unknown quality %d", r.Quality)
	case r.VersionScope == "":
		return "version_scope is not set"
	case r.RecordedAt.IsZero():
		return "recorded_at is not set"
	case !r.BalancingDay.IsValid():
		return "balancing_day is not set"
	}
	if t.TimeModel == hot.Interval {
		switch {
		case !r.To.After(r.From):
			return "to is not after from"
		case !r.To.Truncate(time.Microsecond).Equal(r.To):
			return "to is finer than a microsecond"
		case !c.resolution[r.Resolution]:
			return fmt.Sprintf("unknown resolution %d", r.Resolution)
		case len(t.Resolutions) > 0 && !slices.Contains(t.Resolutions, r.Resolution):
			return fmt.Sprintf("resolution %s is not declared for the table", r.Resolution)
		}
	} else if !r.To.IsZero() || r.Resolution != 0 {
		return "a point reading has neither to nor a resolution"
	}
	for k := range r.Extra {
		if !slices.ContainsFunc(t.Columns, func(c hot.Column) bool { return c.Name == k }) {
			return fmt.Sprintf("column %q is not declared", k)
		}
	}
	for _, col := range t.Columns {
		v, ok := r.Extra[col.Name]
		switch {
		case !ok && col.Identity:
			return fmt.Sprintf("identity column %q is not set", col.Name)
		case !ok:
			continue
		case len(col.Values) > 0 && !slices.Contains(col.Values, v):
			return fmt.Sprintf("column %q: %q is not one of the declared values", col.Name, v)
		case col.Type == hot.BigInt:
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				return fmt.Sprintf("column %q: %q is not a bigint", col.Name, v)
			}
		case v == "":
			return fmt.Sprintf("column %q is empty", col.Name)
		}
	}
	return ""
}

func errOr(err error, s string) any {
	if err != nil {
		return err
	}
	return s
}

// rowError returns the *hot.Error that refuses row i of a stream.
func rowError(kind hot.Kind, op, table string, row int, reason string) error {
	return &hot.Error{Kind: kind, Op: op, Table: table, Rows: []int{row}, Problems: []hot.Problem{{Row: row, Reason: reason}}}
}
