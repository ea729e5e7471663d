package query

import (
	"strings"
	"testing"

	"github.com/meterstore/meterstore/internal/cold"
)

// TestStoredDailyVersions checks how daily resolves the rollup's rows by
// the versions its files' metrics give: with one version, the rows are
// read without a join; with a higher one, or metrics that do not say,
// the rows of each series' day are resolved (the oracle tests check the
// answers of both).
func TestStoredDailyVersions(t *testing.T) {
	l, err := layoutOf(loadProfile())
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"/r/a.parquet", "/r/b.parquet"}
	for _, c := range []struct {
		name     string
		versions []cold.VersionRange
		resolves bool
		lowest   string
	}{
		{"one version", []cold.VersionRange{{Lo: 7, Hi: 7, Known: true}, {Lo: 7, Hi: 7, Known: true}}, false, ""},
		{"a higher version", []cold.VersionRange{{Lo: 7, Hi: 7, Known: true}, {Lo: 7, Hi: 9, Known: true}}, true, "rollup_version = 7"},
		{"a file without metrics", []cold.VersionRange{{Lo: 7, Hi: 7, Known: true}, {}}, true, "rollup_version = (SELECT min(rollup_version)"},
		{"no metrics", nil, true, "rollup_version = (SELECT min(rollup_version)"},
	} {
		sql := storedDailySQL(l, "SELECT 1", &storedDays{files: files, versions: c.versions})
		if got := strings.Contains(sql, "ANTI JOIN"); got != c.resolves {
			t.Errorf("%s: resolves %v, want %v:\n%s", c.name, got, c.resolves, sql)
		}
		if !strings.Contains(sql, c.lowest) {
			t.Errorf("%s: no %q in\n%s", c.name, c.lowest, sql)
		}
	}
}
