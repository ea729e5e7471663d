package hot

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// TestStepBounds: a bound on from becomes the first step at or after it,
// the same in Go (fromLit) and in SQL (fromExpr), before and after 1970,
// on the grid and off it; and a step's start (fromTime) is the start it
// was made from, to the microsecond, up to the year 9999.
func TestStepBounds(t *testing.T) {
	ctx := context.Background()
	_, pool := newTier(t, Options{})
	tab := lastgang("lastgang")
	l := layoutStep
	for _, c := range []struct {
		v    time.Time
		want int64
	}{
		{time.Unix(0, 0), 0},
		{time.Unix(1, 0), 1},
		{time.Unix(900, 0), 1},
		{time.Unix(900, 1000), 2},
		{time.Unix(-1, 0), 0},
		{time.Unix(-900, 0), -1},
		{time.Unix(-901, 0), -1},
		{time.Unix(-1800, 0), -2},
		{day, day.Unix() / 900},
		{day.Add(time.Microsecond), day.Unix()/900 + 1},
		{day.Add(-time.Microsecond), day.Unix() / 900},
		{time.Date(9999, 12, 31, 23, 45, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 45, 0, 0, time.UTC).Unix() / 900},
		{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Unix() / 900},
	} {
		if got := l.fromLit(tab, c.v); got != strconv.FormatInt(c.want, 10) {
			t.Errorf("fromLit(%v) = %s, want %d", c.v, got, c.want)
		}
		var inSQL int64
		if err := pool.QueryRow(ctx, `SELECT `+l.fromExpr(tab, timeLit(c.v))).Scan(&inSQL); err != nil || inSQL != c.want {
			t.Errorf("fromExpr(%v) = %d, %v; want %d", c.v, inSQL, err, c.want)
		}
		if c.v.Unix()%900 != 0 || c.v.Nanosecond() != 0 {
			continue
		}
		var back time.Time
		if err := pool.QueryRow(ctx, `SELECT `+l.fromTime(tab, strconv.FormatInt(c.want, 10)+`::int4`)).Scan(&back); err != nil || !back.Equal(c.v) {
			t.Errorf("fromTime(%d) = %v, %v; want %v", c.want, back, err, c.v)
		}
	}
}
