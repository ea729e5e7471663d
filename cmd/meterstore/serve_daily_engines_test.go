package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// dailyColumns are the columns of daily that the foreign engines' rows of
// the daily views and rollup tables are compared on, as text.
var dailyColumns = []string{"malo_id", "obis_code", "balancing_day", "sparte", "resolution", "unit",
	"expected", "present", "on_grid", "value_sum", "quality_220", "max_version"}

// dailyText returns the select list of dailyColumns as text, in the SQL
// of MeterStore and of Trino.
func dailyText() string {
	cols := make([]string, len(dailyColumns))
	for i, col := range dailyColumns {
		cols[i] = fmt.Sprintf("CAST(%q AS VARCHAR)", col)
	}
	return strings.Join(cols, ", ")
}

// dailyBelow returns MeterStore's rows of the relation daily of table,
// dailyColumns as text, for the days ending at or before w: the days a
// rollup whose current snapshot reflects w holds.
func dailyBelow(t *testing.T, c []string, table, w string) [][]string {
	t.Helper()
	rows := msQuery(t, c, nil, fmt.Sprintf(`SELECT %s FROM %s.daily WHERE "to" <= TIMESTAMPTZ '%s'`, dailyText(), table, w))
	if len(rows) == 0 {
		t.Fatalf("%s.daily has no day ending at or before W %s", table, w)
	}
	return rows
}

// addGasDays gives the fixture's gas table (P1D, balanced by the gas day)
// the gas days 2026-03-01 to 03 of two locations, archives them, then a
// late correction below W of the second location's 2026-03-02 (a higher
// version, another value), and archives again, so that the gas rollup
// holds that day in two rollup versions. It returns the gas table's W.
func addGasDays(t *testing.T, f *archivedFixture) string {
	t.Helper()
	cal, err := metering.NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	const header = "malo_id,obis_code,from,to,value,unit,quality,resolution,version,version_scope\n"
	line := func(b *strings.Builder, meter, day int, value, version string) {
		m, err := metering.MaLoFromPrefix(fmt.Sprintf("%010d", 2_100_000_000+meter))
		if err != nil {
			t.Fatal(err)
		}
		d, err := metering.ParseDate(fmt.Sprintf("2026-03-%02d", day))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(b, "%s,7-20:99.33.17,%s,%s,%s,kWh,220,P1D,%s,9900000000003:2026-03\n", m.String(),
			cal.BalancingDayStart(d, metering.Gas).Format(time.RFC3339), cal.BalancingDayEnd(d, metering.Gas).Format(time.RFC3339), value, version)
	}
	var days, late strings.Builder
	days.WriteString(header)
	for meter := range 2 {
		for day := 1; day <= 3; day++ {
			line(&days, meter, day, fmt.Sprintf("%d.%03d", 300+meter, day), "20260305000000")
		}
	}
	late.WriteString(header)
	line(&late, 1, 2, "42.125", "20260306000000")
	for i, text := range []string{days.String(), late.String()} {
		p := filepath.Join(f.d.dir, fmt.Sprintf("gas-%d.csv", i))
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		mustRun(t, append([]string{"ingest", "--table", "gas", p}, f.c...)...)
		settle(t, f.d.cfgPath, "gas")
	}
	// Nothing of power moved: its readings and W are the fixture's.
	if ids, w := snapshotList(t, f.d.cfgPath); !slices.Equal(ids, f.ids) || w != f.w {
		t.Fatalf("archiving gas changed power's snapshots: %v at %s, then %v at %s", f.ids, f.w, ids, w)
	}
	_, w := tableSnapshots(t, f.d.cfgPath, "gas")
	return w
}

// settle archives at the wall clock until a cycle commits no snapshot of
// table (a cycle archives a bounded number of days), at most ten times.
func settle(t *testing.T, cfgPath, table string) {
	t.Helper()
	var ids []int64
	for range 10 {
		mustRun(t, "archive", "-c", cfgPath)
		again, _ := tableSnapshots(t, cfgPath, table)
		if slices.Equal(again, ids) {
			return
		}
		ids = again
	}
	t.Fatalf("%s: ten archival cycles and still a new snapshot: %v", table, ids)
}

// checkDaily fails t unless an engine's rows of a daily view, view, and
// of its rollup table, raw (dailyColumns and rollup_version, as text),
// both equal MeterStore's rows want: the view as it is, the table once
// the rows of the highest rollup_version of each series' day (malo_id,
// obis_code, balancing_day: the fixtures' tables have no identity
// columns) are kept. It also fails unless some series' day has a
// superseded rollup_version of other values than its current one, which
// a read that ignored rollup_version would take for daily rows.
func checkDaily(t *testing.T, what string, view, raw [][]any, want [][]string) {
	t.Helper()
	same(t, what+"_daily (the view)", view, want)
	n := len(dailyColumns)
	type row struct {
		key, values string
		cols        []any
		version     int64
	}
	rows := make([]row, len(raw))
	top := map[string]int64{}
	for i, r := range raw {
		if len(r) != n+1 {
			t.Fatalf("%s: a rollup row of %d columns, want %d", what, len(r), n+1)
		}
		s := make([]string, len(r))
		for j, v := range r {
			s[j] = str(v)
		}
		v, err := strconv.ParseInt(s[n], 10, 64)
		if err != nil {
			t.Fatalf("%s: rollup_version %q: %v", what, s[n], err)
		}
		rows[i] = row{strings.Join(s[:3], "|"), strings.Join(s[:n], "|"), r[:n], v}
		if cur, ok := top[rows[i].key]; !ok || v > cur {
			top[rows[i].key] = v
		}
	}
	var resolved [][]any
	current := map[string]bool{}
	for _, r := range rows {
		if r.version == top[r.key] {
			resolved = append(resolved, r.cols)
			current[r.values] = true
		}
	}
	same(t, what+" (the rollup table, resolved by rollup_version)", resolved, want)
	changed := 0
	for _, r := range rows {
		if r.version < top[r.key] && !current[r.values] {
			changed++
		}
	}
	if changed == 0 {
		t.Errorf("%s: of %d rollup rows, none superseded by a higher rollup_version of other values: the resolution is not put to the test", what, len(rows))
	}
}
