package archive

import (
	"testing"

	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/series"
)

// TestPrepareRoutesAhead: Prepare prepares a batch for the hot tier only
// when W was read and no row lies below it; a batch prepared so, whose
// day an archival moves below W before it is written, is routed again
// and goes to the cold tier as a late correction, as Write would send it.
func TestPrepareRoutesAhead(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, 4)
	o := newOracle()
	fill(t, e, o, 1, 0, 1, 2, 3)
	a := e.archiver(t, dayConfig)
	cycles(t, a, e, dayN(3)) // W = day 2
	wr := NewRouter(e.hot, e.cold)

	fresh := []series.Reading{qh(0, 3, 5, 2, 43)}
	if b := wr.Prepare(e.t, e.ct, fresh, hot.WriteOptions{}); b.hot != nil {
		t.Fatal("a batch prepared for the hot tier before W was read")
	}
	if res, err := wr.Write(ctx, e.t, e.ct, []series.Reading{qh(0, 2, 0, 1, 2000)}); err != nil || res.Present != 1 {
		t.Fatalf("redelivery: %+v, %v", res, err)
	}
	late := []series.Reading{qh(0, 3, 6, 2, 44), qh(0, 1, 6, 2, 45)}
	lb := wr.Prepare(e.t, e.ct, late, hot.WriteOptions{})
	if lb.hot != nil {
		t.Fatal("a batch with a row below W prepared for the hot tier")
	}
	fb := wr.Prepare(e.t, e.ct, fresh, hot.WriteOptions{})
	if fb.hot == nil || fb.err != nil {
		t.Fatalf("a batch above W not prepared for the hot tier: %v", fb.err)
	}
	if res, err := lb.Write(ctx); err != nil || res.Late != 1 || res.Superseded != 2 {
		t.Fatalf("the batch with a late row: %+v, %v", res, err)
	}
	o.ack(late)

	cycles(t, a, e, dayN(5)) // W = day 4: day 3, the batch's, is archived
	res, err := fb.Write(ctx)
	if err != nil || res.Late != 1 || res.Status[0] != series.Superseded {
		t.Fatalf("a batch whose day was archived after it was routed: %+v, %v, want it late and superseded", res, err)
	}
	o.ack(fresh)
	checkTiers(t, e, o.snapshot())
}
