package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/metering"
)

// TestCompletenessCommand drives meterstore completeness over a deployment
// on the test database: quarter hours around the spring clock change with
// a missing one, a surplus one of another resolution, a correction that
// arrives after archival and a meter seen only before the range; hourly
// gas days of 24 and 23 hours; the range split between the tiers.
func TestCompletenessCommand(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "meterstore.toml")
	mustRun(t, "init", cfgPath)
	tmpl, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(tmpl), `url = ""`, fmt.Sprintf("url = %q", pgtest.NewDB(t)), 1)
	text = strings.Replace(text, `data_dir = "meterstore-data"`, fmt.Sprintf("data_dir = %q", dir), 1)
	text = strings.Replace(text, `url = "file://meterstore-data/warehouse"`, fmt.Sprintf("url = %q", "file://"+filepath.Join(dir, "wh")), 1)
	text = strings.ReplaceAll(text, `headroom = "7d"`, `headroom = "20d"`)
	text = strings.Replace(text, `resolutions = ["PT15M"]`, `resolutions = ["PT15M", "PT5M"]`, 1)
	text = strings.Replace(text, `resolutions = ["P1D"]`, `resolutions = ["PT1H"]`, 1)
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c := []string{"-c", cfgPath}
	mustRun(t, append([]string{"create", "--now", "2026-03-19T00:00:00Z"}, c...)...)

	cal, err := metering.NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	day := func(s string) metering.Date {
		d, err := metering.ParseDate(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d20, d27, d28, d29, d30 := day("2026-03-20"), day("2026-03-27"), day("2026-03-28"), day("2026-03-29"), day("2026-03-30")
	id := func(i int) string {
		m, err := metering.MaLoFromPrefix(fmt.Sprintf("%010d", 3_000_000_000+i))
		if err != nil {
			t.Fatal(err)
		}
		return m.String()
	}
	const header = "malo_id,obis_code,from,to,value,unit,quality,resolution,version,version_scope\n"
	line := func(b *strings.Builder, i int, obis string, from time.Time, step time.Duration, res string, version int) {
		fmt.Fprintf(b, "%s,%s,%s,%s,1.5,kWh,220,%s,%d,9900000000003:2026-03\n", id(i), obis,
			from.Format(time.RFC3339), from.Add(step).Format(time.RFC3339), res, version)
	}
	// days writes the intervals of location i on balancing days ds but
	// those numbered in skip.
	days := func(b *strings.Builder, i int, com metering.Commodity, obis string, step time.Duration, res string, ds []metering.Date, skip ...int) {
		for _, d := range ds {
			for k, from := 0, cal.BalancingDayStart(d, com); from.Before(cal.BalancingDayEnd(d, com)); k, from = k+1, from.Add(step) {
				if !slices.Contains(skip, k) {
					line(b, i, obis, from, step, res, 1)
				}
			}
		}
	}
	const power, gas = "1-1:1.29.0", "7-20:99.33.17"
	var p strings.Builder
	p.WriteString(header)
	days(&p, 0, metering.Electricity, power, 15*time.Minute, "PT15M", []metering.Date{d28, d29, d30})
	days(&p, 1, metering.Electricity, power, 15*time.Minute, "PT15M", []metering.Date{d29}, 10)
	line(&p, 2, power, cal.DayStart(d20).Add(8*time.Hour), 15*time.Minute, "PT15M", 1)
	days(&p, 3, metering.Electricity, power, 15*time.Minute, "PT15M", []metering.Date{d28})
	days(&p, 4, metering.Electricity, power, 15*time.Minute, "PT15M", []metering.Date{d28})
	line(&p, 4, power, cal.DayStart(d28).Add(10*time.Hour+5*time.Minute), 5*time.Minute, "PT5M", 2)
	var g strings.Builder
	g.WriteString(header)
	days(&g, 0, metering.Gas, gas, time.Hour, "PT1H", []metering.Date{d27, d28, d29})
	days(&g, 1, metering.Gas, gas, time.Hour, "PT1H", []metering.Date{d28}, 3)
	for name, body := range map[string]string{"power": p.String(), "gas": g.String()} {
		path := filepath.Join(dir, name+".csv")
		os.WriteFile(path, []byte(body), 0o644)
		mustRun(t, append([]string{"ingest", "--table", name, path}, c...)...)
	}
	// Archive up to 2026-03-29 00:00 UTC, an hour into the Berlin day of
	// the clock change; then correct four quarter hours of location 3
	// below W.
	mustRun(t, append([]string{"archive", "--now", "2026-05-13T00:00:00Z"}, c...)...)
	if out := mustRun(t, append([]string{"snapshots", "--table", "power"}, c...)...); !strings.Contains(out, "2026-03-29T00:00:00Z") {
		t.Fatalf("no snapshot with W 2026-03-29\n%s", out)
	}
	var corr strings.Builder
	corr.WriteString(header)
	for k := range 4 {
		line(&corr, 3, power, cal.DayStart(d28).Add(time.Duration(k)*15*time.Minute), 15*time.Minute, "PT15M", 2)
	}
	path := filepath.Join(dir, "correction.csv")
	os.WriteFile(path, []byte(corr.String()), 0o644)
	mustRun(t, append([]string{"ingest", "--table", "power", path}, c...)...)
	if out := mustRun(t, append([]string{"query", "--table", "power", "--format", "csv",
		`SELECT count(*) AS n FROM readings_versions WHERE malo_id = '` + id(3) + `' AND "from" < '2026-03-29'`}, c...)...); out != "n\n100\n" {
		t.Fatalf("location 3 after the correction: %q", out)
	}

	// report returns malo_id, balancing_day, expected, present, missing
	// and surplus of each row that meterstore completeness writes as CSV.
	report := func(args ...string) []string {
		t.Helper()
		out := mustRun(t, append(append([]string{"completeness", "--format", "csv"}, args...), c...)...)
		rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if err != nil || len(rows) == 0 {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		want := []string{"malo_id", "obis_code", "sparte", "resolution", "balancing_day", "from", "to", "expected", "present", "missing", "surplus", "due"}
		if !slices.Equal(rows[0], want) {
			t.Fatalf("columns %v, want %v", rows[0], want)
		}
		var got []string
		for _, r := range rows[1:] {
			got = append(got, strings.Join([]string{r[0], r[4], r[7], r[8], r[9], r[10]}, " "))
		}
		return got
	}
	row := func(i int, d metering.Date, expected, present, surplus int) string {
		return fmt.Sprintf("%s %s %d %d %d %d", id(i), d, expected, present, expected-present, surplus)
	}
	if got, want := report("--table", "power", "--from", "2026-03-28", "--to", "2026-03-30"), []string{
		row(0, d28, 96, 96, 0), row(0, d29, 92, 92, 0), row(0, d30, 96, 96, 0),
		row(1, d29, 92, 91, 0), row(1, d30, 96, 0, 0),
		row(2, d28, 96, 0, 0), row(2, d29, 92, 0, 0), row(2, d30, 96, 0, 0),
		row(3, d28, 96, 96, 0), row(3, d29, 92, 0, 0), row(3, d30, 96, 0, 0),
		row(4, d28, 96, 96, 1), row(4, d29, 92, 0, 0), row(4, d30, 96, 0, 0),
	}; !slices.Equal(got, want) {
		t.Errorf("power\n got %v\nwant %v", got, want)
	}
	// At noon of the 30th, the 30th is not due yet: nothing of it is
	// missing, though nothing of it is there for most locations; the
	// 29th, which ended at midnight, is due. With a delivery lag of a
	// day, the 29th is not due either.
	notDue := func(i int, d metering.Date, expected, present, surplus int) string {
		return fmt.Sprintf("%s %s %d %d %d %d", id(i), d, expected, present, 0, surplus)
	}
	if got, want := report("--table", "power", "--from", "2026-03-29", "--to", "2026-03-30", "--now", "2026-03-30T12:00:00+02:00"), []string{
		row(0, d29, 92, 92, 0), notDue(0, d30, 96, 96, 0),
		row(1, d29, 92, 91, 0), notDue(1, d30, 96, 0, 0),
		row(2, d29, 92, 0, 0), notDue(2, d30, 96, 0, 0),
		row(3, d29, 92, 0, 0), notDue(3, d30, 96, 0, 0),
		row(4, d29, 92, 0, 0), notDue(4, d30, 96, 0, 0),
	}; !slices.Equal(got, want) {
		t.Errorf("power at noon of the 30th\n got %v\nwant %v", got, want)
	}
	lagged := filepath.Join(dir, "lagged.toml")
	os.WriteFile(lagged, []byte(strings.Replace(text, `delivery_lag = "0s"`, `delivery_lag = "1d"`, 1)), 0o644)
	out := mustRun(t, "completeness", "-c", lagged, "--table", "power", "--from", "2026-03-29", "--to", "2026-03-29",
		"--now", "2026-03-30T12:00:00+02:00", "--incomplete", "--format", "csv")
	if lines := strings.Count(out, "\n"); lines != 1 {
		t.Errorf("with a delivery lag of a day, the 29th at noon of the 30th is incomplete:\n%s", out)
	}
	if got, want := report("--table", "power", "--from", "2026-03-29", "--to", "2026-03-29", "--incomplete"), []string{
		row(1, d29, 92, 91, 0), row(2, d29, 92, 0, 0), row(3, d29, 92, 0, 0), row(4, d29, 92, 0, 0),
	}; !slices.Equal(got, want) {
		t.Errorf("power, incomplete on the 29th\n got %v\nwant %v", got, want)
	}
	if got, want := report("--table", "gas", "--from", "2026-03-27", "--to", "2026-03-29"), []string{
		row(0, d27, 24, 24, 0), row(0, d28, 23, 23, 0), row(0, d29, 24, 24, 0),
		row(1, d28, 23, 22, 0), row(1, d29, 24, 0, 0),
	}; !slices.Equal(got, want) {
		t.Errorf("gas\n got %v\nwant %v", got, want)
	}
	out = mustRun(t, append([]string{"completeness", "--table", "gas", "--from", "2026-03-28", "--to", "2026-03-28", "--format", "json"}, c...)...)
	if want := `{"malo_id":"` + id(0) + `","obis_code":"7-20:99.33.17","sparte":"GAS","resolution":"PT1H","balancing_day":"2026-03-28",` +
		`"from":"2026-03-28T05:00:00Z","to":"2026-03-29T04:00:00Z","expected":23,"present":23,"missing":0,"surplus":0,"due":true}`; !strings.HasPrefix(out, want+"\n") {
		t.Errorf("--format json: got %q, want it to begin with %q", out, want)
	}
	out = mustRun(t, append([]string{"completeness", "--table", "gas", "--from", "2026-03-28", "--to", "2026-03-28"}, c...)...)
	if lines := strings.Split(out, "\n"); len(lines) != 4 || strings.Join(strings.Fields(lines[0]), " ") != "malo_id obis_code sparte resolution balancing_day from to expected present missing surplus due" ||
		strings.Join(strings.Fields(lines[2])[4:], " ") != "2026-03-28 2026-03-28T05:00:00Z 2026-03-29T04:00:00Z 23 22 1 0 true" {
		t.Errorf("--format table: %q", out)
	}
	// Ten years of days are reported, series seen before them too; a day
	// more is refused before the deployment is asked.
	if got := report("--table", "power", "--from", "2016-03-26", "--to", "2026-04-02", "--incomplete"); len(got) == 0 ||
		!strings.HasPrefix(got[len(got)-1], id(4)+" 2026-04-02 96 0 96 0") {
		t.Errorf("completeness over 3660 days: %d rows, ending %q", len(got), got[len(got)-1:])
	}
	for _, span := range [][2]string{{"2016-03-25", "2026-04-02"}, {"0001-01-01", "9999-12-31"}} {
		out, code := run(t, append([]string{"completeness", "--table", "power", "--from", span[0], "--to", span[1]}, c...)...)
		if code != exitPermanent || !strings.Contains(out, "at most 3660 (ten years)") {
			t.Errorf("completeness from %s to %s: exit %d\n%s", span[0], span[1], code, out)
		}
	}
	for _, args := range [][]string{
		{"--table", "power", "--from", "2026-03-30", "--to", "2026-03-28"},
		{"--table", "power", "--from", "2026-03-32", "--to", "2026-04-01"},
		{"--table", "power", "--from", "2026-03-28", "--to", "2026-03-30", "--format", "xml"},
		{"--table", "nosuch", "--from", "2026-03-28", "--to", "2026-03-30"},
	} {
		if out, code := run(t, append(append([]string{"completeness"}, args...), c...)...); code != exitPermanent {
			t.Errorf("completeness %v: exit %d\n%s", args, code, out)
		}
	}
}
