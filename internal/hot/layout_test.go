package hot

import (
	"strings"
	"testing"

	"github.com/meterstore/meterstore/series"
)

// TestLayoutStoredForm: the layouts keep the values hot_tables records
// of them, which are on-disk format, and parseLayout reads those back and
// refuses any other.
func TestLayoutStoredForm(t *testing.T) {
	for _, c := range []struct {
		stored string
		want   layout
		i      series.Integrity
	}{
		{"", layoutRows, series.IntegrityExclusion},
		{"dictionary", layoutDictionary, series.IntegrityStatement},
		{"lean", layoutLean, series.IntegrityStatement},
		{"step", layoutStep, series.IntegrityStatement},
	} {
		l, err := parseLayout(c.stored)
		if err != nil || l != c.want || l.String() != c.stored {
			t.Errorf("parseLayout(%q) = %v, %v", c.stored, l, err)
		}
		if c.want == layoutDictionary || c.want == layoutLean {
			continue // no longer given to new tables
		}
		if d := definitionOf(lastgang("layout"), c.i); d.Layout != c.stored || newLayout(c.i) != c.want {
			t.Errorf("integrity %s: recorded layout %q, want %q", c.i, d.Layout, c.stored)
		}
	}
	if l, err := parseLayout("rows"); err == nil || !strings.Contains(err.Error(), `unknown layout "rows"`) {
		t.Errorf(`parseLayout("rows") = %v, %v; want an unknown layout`, l, err)
	}
}
