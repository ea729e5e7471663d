package demo

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestDays: the days delivered end with the last whose deliveries (06:00
// Berlin time the morning after) have arrived by now.
func TestDays(t *testing.T) {
	cal, err := metering.NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		now         string
		first, last string
	}{
		{"2026-04-21T06:00:00+02:00", "2026-03-10", "2026-04-20"},
		{"2026-04-21T05:59:59+02:00", "2026-03-09", "2026-04-19"},
		{"2026-04-21T23:59:59+02:00", "2026-03-10", "2026-04-20"},
		{"2026-12-01T09:30:00Z", "2026-10-20", "2026-11-30"},
	} {
		now, _ := time.Parse(time.RFC3339, tc.now)
		first, last := days(cal, now, 42)
		if first.String() != tc.first || last.String() != tc.last {
			t.Errorf("42 days by %s: %s to %s, want %s to %s", tc.now, first, last, tc.first, tc.last)
		}
	}
}

// TestGasQuery: the gas query shows the latest clock change among the
// days delivered, with its hours, or says there is none.
func TestGasQuery(t *testing.T) {
	cal, err := metering.NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		first, last string
		want        string
	}{
		{"2026-09-02", "2026-11-30", "the gas day named after Saturday 24 October has 25 hours"},
		{"2026-02-01", "2026-05-01", "the gas day named after Saturday 28 March has 23 hours"},
		{"2026-06-01", "2026-08-29", "no clock change among the days delivered (2026-06-01 to 2026-08-29)"},
	} {
		r := &runner{cal: cal}
		r.first, _ = metering.ParseDate(tc.first)
		r.last, _ = metering.ParseDate(tc.last)
		if q := r.gasQuery(); !strings.Contains(q.title, tc.want) {
			t.Errorf("%s to %s: %q, want %q", tc.first, tc.last, q.title, tc.want)
		}
	}
}

// TestDemo runs a small demo end to end on the test server: every reading
// written is in exactly one tier, W trails the last day by the settlement
// lag, the cold tier holds data, and the deployment it leaves is healthy
// at the demo's now.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Dir: filepath.Join(t.TempDir(), "demo"), PGURL: pgtest.NewDB(t),
		// The days delivered are March 10 to April 20.
		Meters: 8, Days: 42, Now: time.Date(2026, 4, 21, 9, 30, 0, 0, berlin),
		Out: &out,
	}
	rep, err := Run(t.Context(), cfg)
	t.Logf("%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	var stored int64
	for _, tr := range rep.Tables {
		stored += tr.HotRows + tr.ColdRows
		// Deliveries end on April 20 (Berlin); 14 days of settlement lag.
		if want := time.Date(2026, 4, 7, 0, 0, 0, 0, time.UTC); !tr.Watermark.Equal(want) {
			t.Errorf("%s: W = %v, want %v", tr.Name, tr.Watermark, want)
		}
		if tr.ColdRows == 0 || tr.HotRows == 0 || tr.Windows == 0 {
			t.Errorf("%s: %+v: want rows in both tiers", tr.Name, tr)
		}
		// March is settled (W is in April): its daily windows' files
		// were compacted, so the table has fewer files than windows.
		fp := tr.Cold
		if fp.Readings != tr.ColdRows || len(fp.Columns) == 0 || fp.ValueEntropyBits <= 0 || fp.Files >= tr.Windows {
			t.Errorf("%s: cold footprint %d readings in %d files (%d windows), %d columns, entropy %.2f bits; want %d readings in fewer files than windows",
				tr.Name, fp.Readings, fp.Files, tr.Windows, len(fp.Columns), fp.ValueEntropyBits, tr.ColdRows)
		}
	}
	// Readings counts every new row, the late ones routed to the cold tier
	// included; each must be in exactly one tier.
	if want := int64(rep.Readings); stored != want {
		t.Errorf("tiers hold %d readings, %d were written (%d of them late)", stored, want, rep.Late)
	}
	if rep.Late == 0 {
		t.Error("no late correction reached the cold tier")
	}
	if !strings.Contains(out.String(), "value entropy") {
		t.Error("the report does not compare the cold bytes with the value entropy")
	}
	if !strings.Contains(out.String(), "StaticTable.from_metadata") {
		t.Error("the report does not say how to read the data again")
	}
	// The monthly totals name their month as year and month, March's
	// from both tiers' rows.
	if !regexp.MustCompile(`\n\s+\d{11}\s+2026-03\s+[0-9.]+\s+\d+\n`).MatchString(out.String()) {
		t.Error("the report does not show a meter's March total")
	}
	// The gas day named after the Saturday before the clock change has 23
	// hours, and the query that says so read both tiers.
	if !regexp.MustCompile(`2026-03-28\s+23\s`).MatchString(out.String()) {
		t.Error("the report does not show the 23-hour gas day")
	}
	// The configuration the demo leaves opens the same deployment.
	c, err := config.Load(filepath.Join(cfg.Dir, "meterstore.toml"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.OpenConfig(t.Context(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	// It is healthy at the demo's now: what a newcomer's next command,
	// meterstore status, finds.
	for _, st := range s.Status(t.Context(), cfg.Now) {
		if !st.Healthy || st.WatermarkLag > 15*24*time.Hour {
			t.Errorf("status at the demo's now: %+v", st)
		}
	}
	res, err := s.Query(t.Context(), "power", `SELECT count(*) FROM readings_versions`)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Rows[0][0], rep.Tables[0].HotRows+rep.Tables[0].ColdRows; got != want || len(res.Tiers) != 2 {
		t.Errorf("through the written configuration: %v readings from %v, want %d from both tiers", got, res.Tiers, want)
	}
	// A second run replaces the first demo's directory.
	cfg.Days, cfg.Out = 2, nil
	if _, err := Run(t.Context(), cfg); err != nil {
		t.Fatalf("second run: %v", err)
	}
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "precious"), []byte("x"), 0o644)
	if _, err := Run(t.Context(), Config{Dir: foreign, PGURL: cfg.PGURL, Meters: 8, Now: cfg.Now, Days: 1}); err == nil {
		t.Error("the demo took over a directory it did not create")
	}
	if _, err := os.Stat(filepath.Join(foreign, "precious")); err != nil {
		t.Error("the demo removed a file it did not create")
	}
}
