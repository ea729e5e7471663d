package hot

import (
	"context"
	"maps"
	"testing"

	"github.com/meterstore/meterstore/series"
)

// TestStagedPathVersions: a batch the direct copy cannot take (it holds a
// redelivery, so the staged path writes it) stores its new versions as
// they were delivered, in every layout of integrity statement: the lean
// layout's insert from the stage must store them biased as its copy
// does, or a read gives back 2⁶³ more.
func TestStagedPathVersions(t *testing.T) {
	for _, v := range statementLayouts {
		t.Run(v.name, func(t *testing.T) {
			h, _ := newTier(t, Options{})
			tab := lastgang("staged_" + v.name)
			declareVariant(t, h, tab, v)
			ctx := context.Background()
			mustWrite(t, h, tab, meterDay(1, 1))
			batch := []series.Reading{qh(1, 0, series.Decimal((1*96+0)%5000*1000+123), 1), qh(1, 5, 777, 3), qh(2, 7, 555, 7)}
			res, err := h.Write(ctx, tab, batch)
			if err != nil {
				t.Fatal(err)
			}
			if res.Present != 1 {
				t.Fatalf("outcome %+v: want the redelivery present", res)
			}
			want := map[string]uint64{batch[1].MaLo + batch[1].From.String(): 3, batch[2].MaLo + batch[2].From.String(): 7}
			got := map[string]uint64{}
			for _, r := range scanAll(t, h, tab) {
				if r.Version != 1 {
					got[r.MaLo+r.From.String()] = r.Version
				}
			}
			if !maps.Equal(got, want) {
				t.Errorf("stored versions other than 1: %v, want %v", got, want)
			}
		})
	}
}
