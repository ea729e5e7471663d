// Package msconstest holds what tests of MSCONS ingest share about the
// interchanges written by others in internal/mscons/testdata/msconsconverter.
package msconstest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// period matches the dates of DTM+163 and DTM+164 in format 303: twelve
// digits CCYYMMDDHHMM, then the offset with its release character.
var period = regexp.MustCompile(`^DTM\+16[34]:(\d{10})(\d\d)\?([+-]\d\d):303$`)

// OnGrid returns a copy of an interchange whose values all lie on the
// quarter-hour grid, with how many DTM segments it floored and how many
// values it dropped. The published 2.2e samples bound some quarter hours
// at 20:16 and 01:55, which it floors to the quarter hour; on 2015-12-20
// they give 13:45-15:00, 16:45-16:00 and 16:00-16:45 twice, which it drops
// with their values (every value whose interval is not a quarter hour, and
// every value of a start given twice). The other values stay as they are,
// so that the store and another reader can be compared on them. It knows
// the samples' shape: QTY, DTM+163, DTM+164 in that order, no released
// segment terminator, format 303.
func OnGrid(s string) (out string, floored, dropped int) {
	segs := strings.Split(s, "'")
	type group struct {
		at       int // index of QTY
		loc      string
		from, to time.Time
	}
	var groups []group
	loc := ""
	for i, seg := range segs {
		seg = strings.TrimSpace(seg)
		if m := period.FindStringSubmatch(seg); m != nil {
			mm, _ := strconv.Atoi(m[2])
			if mm%15 != 0 {
				floored++
				segs[i] = strings.Replace(seg, m[1]+m[2], fmt.Sprintf("%s%02d", m[1], mm/15*15), 1)
			}
		}
	}
	at := func(seg string) (time.Time, bool) {
		m := period.FindStringSubmatch(strings.TrimSpace(seg))
		if m == nil {
			return time.Time{}, false
		}
		t, err := time.Parse("200601021504-07", m[1]+m[2]+m[3])
		return t, err == nil
	}
	for i := 0; i+2 < len(segs); i++ {
		seg := strings.TrimSpace(segs[i])
		if strings.HasPrefix(seg, "LOC+172+") {
			loc = seg
		}
		if !strings.HasPrefix(seg, "QTY+") || !strings.HasPrefix(strings.TrimSpace(segs[i+1]), "DTM+163:") || !strings.HasPrefix(strings.TrimSpace(segs[i+2]), "DTM+164:") {
			continue
		}
		from, ok1 := at(segs[i+1])
		to, ok2 := at(segs[i+2])
		if ok1 && ok2 {
			groups = append(groups, group{i, loc, from, to})
		}
	}
	starts := make(map[string]int)
	key := func(g group) string { return g.loc + g.from.UTC().Format(time.RFC3339) }
	for _, g := range groups {
		if g.to.Sub(g.from) == 15*time.Minute {
			starts[key(g)]++
		}
	}
	drop := make(map[int]bool)
	for _, g := range groups {
		if g.to.Sub(g.from) != 15*time.Minute || starts[key(g)] > 1 {
			dropped++
			drop[g.at], drop[g.at+1], drop[g.at+2] = true, true, true
		}
	}
	var b strings.Builder
	n := 0 // segments of the current message
	for i, seg := range segs {
		if drop[i] {
			continue
		}
		t := strings.TrimSpace(seg)
		switch {
		case strings.HasPrefix(t, "UNH+"):
			n = 0
		case strings.HasPrefix(t, "UNT+"):
			// The segment count follows the segments dropped.
			f := strings.SplitN(t, "+", 3)
			seg = fmt.Sprintf("UNT+%d+%s", n+1, f[2])
		}
		n++
		b.WriteString(seg)
		if i < len(segs)-1 {
			b.WriteByte('\'')
		}
	}
	return b.String(), floored, dropped
}
