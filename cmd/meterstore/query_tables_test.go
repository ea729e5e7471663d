package main

import (
	"testing"
	"time"

	"github.com/meterstore/meterstore/store"
)

// TestOthersLine: the line after a result names each other table read,
// with its own watermark and tiers; the queried table is on the line
// already.
func TestOthersLine(t *testing.T) {
	w := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		h    store.ResultHeader
		want string
	}{
		{store.ResultHeader{}, ""},
		{store.ResultHeader{Tables: []store.TableRead{{Name: "power", Watermark: w, HasWatermark: true}}}, ""},
		{store.ResultHeader{Tables: []store.TableRead{
			{Name: "power", Watermark: w, HasWatermark: true, Tiers: []string{"cold", "hot"}},
			{Name: "gas", Watermark: w.AddDate(0, 1, 0), HasWatermark: true, Tiers: []string{"cold", "hot"}, Snapshot: 7},
			{Name: "heat", Tiers: []string{"hot"}},
		}}, "; gas: watermark 2026-04-01T00:00:00Z, tiers cold, hot, snapshot 7; heat: watermark -, tiers hot"},
	} {
		if got := othersLine("power", &c.h); got != c.want {
			t.Errorf("%+v:\ngot  %q\nwant %q", c.h.Tables, got, c.want)
		}
	}
}
