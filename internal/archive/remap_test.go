package archive

import (
	"errors"
	"reflect"
	"testing"

	"github.com/meterstore/meterstore/internal/hot"
)

// TestRemap: the rows of a part's error, and the rows its reasons refer
// to, are translated to the whole batch.
func TestRemap(t *testing.T) {
	idx := []int{1, 4, 6}
	err := remap(&hot.Error{Kind: hot.IntegrityViolation, Op: "write", Rows: []int{2}, Problems: []hot.Problem{
		{Row: 2, Reason: "restates row 0 under the same key and version: channel row 1, now row 2"},
	}}, idx)
	var he *hot.Error
	if !errors.As(err, &he) {
		t.Fatal(err)
	}
	want := []hot.Problem{{Row: 6, Reason: "restates row 1 under the same key and version: channel row 1, now row 2"}}
	if !reflect.DeepEqual(he.Rows, []int{6}) || !reflect.DeepEqual(he.Problems, want) {
		t.Errorf("rows %v, problems %+v", he.Rows, he.Problems)
	}
}
