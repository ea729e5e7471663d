package cold

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/meterstore/meterstore/series"
)

// A keyOrder checks that an archived window's readings come as the hot tier
// scans its partitions, so that the versions of a merge key are adjacent
// and the superseded marks are right: partition after partition in time,
// each in primary key order (market location, OBIS code, from, identity
// columns, version). The text columns other than the market location sort
// by the server's collation, which the check cannot know, so it asks only
// that each of their runs is not seen again; a market location id is
// digits of a fixed length, which every collation sorts alike. Memory is
// bounded by the runs of one market location.
type keyOrder struct {
	decl    *series.Table
	started bool
	part    time.Time // start of the hot partition being read

	malo  string
	obis  string
	obisD map[string]bool // OBIS codes of malo done
	from  time.Time
	ident string
	last  map[string]string // the previous reading's Extra
	idD   map[string]bool   // identity tuples of (malo, obis, from) done
	ver   uint64
	// sameSeries tells that the reading next last passed has the market
	// location, OBIS code and identity columns of the one before it.
	sameSeries bool
}

func newKeyOrder(decl *series.Table) *keyOrder {
	return &keyOrder{decl: decl, obisD: map[string]bool{}, idD: map[string]bool{}}
}

// next checks r, which follows the readings checked so far. It returns
// whether r shares its merge key with the previous reading, or why r is
// out of order.
func (o *keyOrder) next(r *series.Reading) (same bool, reason string) {
	part := o.decl.Width.Start(r.From)
	ident := o.ident
	sameID := o.started && o.sameIdentity(r)
	if !sameID {
		ident = o.identity(r) // only where it changes: it allocates
	}
	defer func() {
		if reason == "" {
			o.sameSeries = sameID && r.MaLo == o.malo && r.OBIS == o.obis
			o.started, o.part, o.malo, o.obis, o.from, o.ident, o.ver = true, part, r.MaLo, r.OBIS, r.From, ident, r.Version
			o.last = r.Extra
		}
	}()
	const order = ": a window's readings must come partition by partition, each in primary key order"
	switch {
	case !o.started || part.After(o.part):
		clear(o.obisD)
		clear(o.idD)
	case part.Before(o.part):
		return false, fmt.Sprintf("from %s lies in a partition before the previous reading's%s", FormatTime(r.From), order)
	case r.MaLo < o.malo:
		return false, fmt.Sprintf("market location %s follows %s%s", r.MaLo, o.malo, order)
	case r.MaLo > o.malo:
		clear(o.obisD)
		clear(o.idD)
	case r.OBIS != o.obis:
		if o.obisD[r.OBIS] {
			return false, fmt.Sprintf("OBIS code %s of market location %s comes again after another%s", r.OBIS, r.MaLo, order)
		}
		o.obisD[o.obis] = true
		clear(o.idD)
	case r.From.Before(o.from):
		return false, fmt.Sprintf("from %s follows %s of the same series%s", FormatTime(r.From), FormatTime(o.from), order)
	case r.From.After(o.from):
		clear(o.idD)
	case ident != o.ident:
		if o.idD[ident] {
			return false, "identity columns " + strconv.Quote(ident) + " come again after others" + order
		}
		o.idD[o.ident] = true
	case r.Version <= o.ver:
		return false, fmt.Sprintf("version %d follows version %d of its merge key%s", r.Version, o.ver, order)
	default:
		return true, ""
	}
	return false, ""
}

// sameIdentity reports whether r has the identity columns of the previous
// reading.
func (o *keyOrder) sameIdentity(r *series.Reading) bool {
	for _, c := range o.decl.Columns {
		if c.Identity && r.Extra[c.Name] != o.last[c.Name] {
			return false
		}
	}
	return true
}

// identity returns r's identity columns as one string.
func (o *keyOrder) identity(r *series.Reading) string {
	var b strings.Builder
	for _, c := range o.decl.Columns {
		if c.Identity {
			v := r.Extra[c.Name]
			b.WriteString(strconv.Itoa(len(v)))
			b.WriteByte(':')
			b.WriteString(v)
		}
	}
	return b.String()
}
