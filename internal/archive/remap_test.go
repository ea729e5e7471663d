package archive

import (
	"errors"
	"reflect"
	"testing"

	"github.com/meterstore/meterstore/series"
)

// TestRemap: the rows of a part's error, and the rows its reasons refer
// to, are translated to the whole batch.
func TestRemap(t *testing.T) {
	idx := []int{1, 4, 6}
	err := remap(&series.Error{Kind: series.IntegrityViolation, Op: "write", Rows: []int{2}, Problems: []series.Problem{
		{Row: 2, Reason: "restates row 0 under the same key and version: channel row 1, now row 2"},
	}}, idx)
	var he *series.Error
	if !errors.As(err, &he) {
		t.Fatal(err)
	}
	want := []series.Problem{{Row: 6, Reason: "restates row 1 under the same key and version: channel row 1, now row 2"}}
	if !reflect.DeepEqual(he.Rows, []int{6}) || !reflect.DeepEqual(he.Problems, want) {
		t.Errorf("rows %v, problems %+v", he.Rows, he.Problems)
	}
}
