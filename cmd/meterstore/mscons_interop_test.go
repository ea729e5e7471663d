package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/mscons/msconstest"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// samples is where the interchanges written by others lie, beside their
// licence.
const samples = "../../internal/mscons/testdata/msconsconverter"

// interval is one value over one interval, as either reader gives it.
type interval struct {
	to    time.Time
	value series.Decimal
}

// TestMSCONSInterop runs the interchanges of msconsconverter's tests
// through `meterstore ingest` and through msconsconverter 2.0.0 (PyPI),
// which converts MSCONS to CSV on its own, and compares every interval,
// in UTC, and value MeterStore stored with what msconsconverter read. As
// published, the 2.2e samples are refused (intervals off the quarter-hour
// grid) and the 2.4b sample too (its version); both readers are compared
// on the 2.2e samples put on the grid (msconstest.OnGrid). It needs the
// Python package: without it the test fails in CI and is skipped
// elsewhere.
func TestMSCONSInterop(t *testing.T) {
	if err := exec.Command("python3", "-c", "import importlib.metadata as m; assert m.version('msconsconverter') == '2.0.0'").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("msconsconverter 2.0.0 is required: .ci/run installs it", err)
		}
		t.Skip("msconsconverter 2.0.0 is required: pip install msconsconverter==2.0.0")
	}
	cfgPath, dir := msconsDeployment(t)
	c := []string{"-c", cfgPath}
	// Then, as the samples were sent, rather than the clock.
	now := append([]string{"--now", "2016-01-13T00:00:00Z"}, c...)
	const melo = "US0001062600000001000000022345671"
	malo, err := metering.MaLoFromPrefix("5100000000")
	if err != nil {
		t.Fatal(err)
	}
	relations := filepath.Join(dir, "melo-malo.csv")
	if err := os.WriteFile(relations, []byte("melo_id,malo_id\n"+melo+","+malo.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, append([]string{"create"}, now...)...)
	ingest := func(path string) (string, int) {
		return run(t, append([]string{"ingest", "--table", "power", "--format", "mscons", "--melo-malo", relations, path}, c...)...)
	}

	// As published: refused whole, naming the segment, nothing written.
	for name, want := range map[string][]string{
		"MSCONS_TL_SAMPLE01.txt": {"segment 256 (DTM): an interval of 16m0s from 2015-12-01T19:00:00Z is no resolution"},
		"MSCONS_TL_SAMPLE02.txt": {"segment 256 (DTM): an interval of 16m0s from 2015-12-01T19:00:00Z is no resolution"},
		"MSCONS_TL_Multiple_LOC_SAMPLE.txt": {
			`message 1 "1" refused, nothing of it written: message 1 "1": segment 1 (UNH): message MSCONS:D:04B:UN:2.4b is not supported`,
			`message 2 "2" refused, nothing of it written: message 2 "2": segment 1 (UNH): message MSCONS:D:04B:UN:2.4b is not supported`,
		},
	} {
		out, code := ingest(filepath.Join(samples, name))
		for _, w := range want {
			if code != exitPermanent || !strings.Contains(out, w) {
				t.Errorf("%s: exit %d, want %d and %q in\n%s", name, code, exitPermanent, w, out)
			}
		}
	}
	if got := storedQuery(t, now, `SELECT count(*) AS n FROM readings_versions`); got != "n\n0" {
		t.Fatalf("after the refusals: %s", got)
	}

	// On the grid: every value stored, the second (identical) sample all
	// present.
	stored := 0
	for i, name := range []string{"MSCONS_TL_SAMPLE01.txt", "MSCONS_TL_SAMPLE02.txt"} {
		raw, err := os.ReadFile(filepath.Join(samples, name))
		if err != nil {
			t.Fatal(err)
		}
		grid, _, _ := msconstest.OnGrid(string(raw))
		path := filepath.Join(dir, "grid-"+name)
		if err := os.WriteFile(path, []byte(grid), 0o644); err != nil {
			t.Fatal(err)
		}
		want := strings.Count(grid, "'QTY+")
		out, code := ingest(path)
		result := fmt.Sprintf("%d readings: %d inserted", want, want)
		if i == 1 {
			result = fmt.Sprintf("%d readings: 0 inserted, %d already present", want, want)
		}
		if code != 0 || !strings.Contains(out, result) {
			t.Fatalf("%s on the grid: exit %d, want %q in\n%s", name, code, result, out)
		}
		theirs := msconsconverter(t, path)
		if len(theirs[melo]) != want || len(theirs) != 1 {
			t.Fatalf("%s: msconsconverter read %d values of %d locations, want %d of 1", name, len(theirs[melo]), len(theirs), want)
		}
		ours := storedIntervals(t, now, malo.String(), melo)
		if len(ours) != want {
			t.Fatalf("%s: %d intervals stored, want %d", name, len(ours), want)
		}
		for from, w := range theirs[melo] {
			g, ok := ours[from]
			switch {
			case !ok:
				t.Errorf("%s: msconsconverter's %s-%s = %s is not stored", name, from, w.to, w.value)
			case !g.to.Equal(w.to) || g.value != w.value:
				t.Errorf("%s: from %s: stored to %s = %s, msconsconverter to %s = %s", name, from, g.to, g.value, w.to, w.value)
			}
		}
		stored += len(ours)
	}
	if got := storedQuery(t, now, `SELECT count(*) AS n, min(version) AS v FROM readings_versions`); got != fmt.Sprintf("n,v\n%d,20160112124700", stored/2) {
		t.Errorf("versions: %s", got)
	}
	t.Logf("compared %d intervals (%d per sample) with msconsconverter", stored, stored/2)
}

// msconsDeployment writes a configuration for a private PostgreSQL
// database and returns its path and directory.
func msconsDeployment(t *testing.T) (cfgPath, dir string) {
	t.Helper()
	dir = t.TempDir()
	cfgPath = filepath.Join(dir, "meterstore.toml")
	mustRun(t, "init", cfgPath)
	tmpl, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(tmpl), `url = ""`, fmt.Sprintf("url = %q", pgtest.NewDB(t)), 1)
	text = strings.Replace(text, `data_dir = "meterstore-data"`, fmt.Sprintf("data_dir = %q", dir), 1)
	text = strings.Replace(text, `url = "file://meterstore-data/warehouse"`, fmt.Sprintf("url = %q", "file://"+filepath.Join(dir, "wh")), 1)
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfgPath, dir
}

func storedQuery(t *testing.T, c []string, sql string) string {
	t.Helper()
	return strings.TrimSpace(mustRun(t, append([]string{"query", "--table", "power", "--format", "csv", sql}, c...)...))
}

// storedIntervals returns what the store holds for a market location, by
// the start of each interval in UTC; every reading must name melo.
func storedIntervals(t *testing.T, c []string, malo, melo string) map[time.Time]interval {
	t.Helper()
	out := storedQuery(t, c, `SELECT melo_id, "from", "to", value FROM readings WHERE malo_id = '`+malo+`' ORDER BY "from"`)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := make(map[time.Time]interval, len(rows))
	for _, r := range rows[1:] {
		from, err1 := time.Parse(time.RFC3339, r[1])
		to, err2 := time.Parse(time.RFC3339, r[2])
		v, err3 := series.ParseDecimal(r[3])
		if err1 != nil || err2 != nil || err3 != nil || r[0] != melo {
			t.Fatalf("stored row %q: %v %v %v", r, err1, err2, err3)
		}
		got[from] = interval{to, v}
	}
	return got
}

// msconsconverter converts an interchange with msconsconverter's command
// and returns its values by location and start in UTC. Version 2.0.0
// writes a row for every segment after the first QTY, with the latest
// value, start and end it has seen; a value's own row is the one written
// at its DTM+164, where the end changes. The first row of a location is
// written at its first QTY, with the location's period (the DTM+163 and
// DTM+164 after LOC), and is no value's.
func msconsconverter(t *testing.T, path string) map[string]map[time.Time]interval {
	t.Helper()
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "-m", "msconsconverter", "convert", "--input-file", path, "--output-directory", out)
	cmd.Dir = out
	if log, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("msconsconverter: %v\n%s", err, log)
	}
	files, err := filepath.Glob(filepath.Join(out, "*.csv"))
	if err != nil || len(files) != 1 {
		t.Fatalf("msconsconverter wrote %v (%v), want one CSV", files, err)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := make(map[string]int)
	for i, h := range rows[0] {
		col[h] = i
	}
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse("200601021504-07", s)
		if err != nil {
			t.Fatalf("msconsconverter's date %q: %v", s, err)
		}
		return v.UTC()
	}
	got := make(map[string]map[time.Time]interval)
	prev := make(map[string]string)
	for _, r := range rows[1:] {
		loc, end := r[col["LOC_MSCONS"]], r[col["DATE_PERIOD_END"]]
		last, seen := prev[loc]
		prev[loc] = end
		if !seen || end == last {
			continue
		}
		v, err := series.ParseDecimal(strings.Replace(r[col["VALUE"]], ",", ".", 1))
		if err != nil {
			t.Fatalf("msconsconverter's value %q: %v", r[col["VALUE"]], err)
		}
		if got[loc] == nil {
			got[loc] = make(map[time.Time]interval)
		}
		from := at(r[col["DATE_PERIOD_START"]])
		if _, dup := got[loc][from]; dup {
			t.Fatalf("msconsconverter gives %s twice for %s", from, loc)
		}
		got[loc][from] = interval{at(end), v}
	}
	return got
}
