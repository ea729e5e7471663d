package servebench

import (
	"errors"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/ingest"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// buildMeterstore builds the command whose serve the bench runs.
func buildMeterstore(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "meterstore")
	out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "github.com/meterstore/meterstore/cmd/meterstore").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// tinyConfig is a run of seconds: 200 meters in batches of 20 meter-days.
func tinyConfig(t *testing.T, bin string) Config {
	c := DefaultConfig()
	c.Binary, c.PgURL = bin, pgtest.NewDB(t)
	c.Fixture.Meters, c.Fixture.MetersPerBatch = 200, 20
	c.IngestClients, c.QueryClients, c.Rounds = 2, 1, 2
	c.QueryFor, c.MaxRows = time.Second, 1000
	return c
}

// TestRun runs a tiny bench end to end against a real serve and
// PostgreSQL: every phase measured, the portal workload's answers each a
// meter's whole day, the count check passed; then the
// same with a client that drops acknowledged batches, which the count
// check must catch.
func TestRun(t *testing.T) {
	bin := buildMeterstore(t)

	c := tinyConfig(t, bin)
	c.LargeResult, c.Portal, c.PortalClients = true, true, 2
	res, err := Run(t.Context(), c)
	if res == nil || len(res.Counts) != 2 {
		t.Fatalf("no count check: %+v, %v", res, err)
	}
	// The large result needs a streaming POST /v1/query: until then the
	// server refuses it, and the run says so; once it streams, the answer
	// is every reading stored.
	if l := res.Large; l == nil {
		t.Error("no large result")
	} else if l.Status == 200 {
		if err != nil || l.Rows != res.Counts[1].Stored {
			t.Errorf("large result: %d rows of %d stored; %v", l.Rows, res.Counts[1].Stored, err)
		}
	} else if l.Status != 413 || err == nil || !strings.Contains(err.Error(), "stream") {
		t.Errorf("large result: status %d, error %v", l.Status, err)
	}
	// The same rows through the PostgreSQL protocol and Flight SQL, and
	// a point query over both.
	if len(res.Wire) != 3 || res.Point == nil || res.Point.PGp50 <= 0 || res.Point.HTTPp50 <= 0 {
		t.Errorf("the large result over the protocols: %+v, point query %+v", res.Wire, res.Point)
	}
	for _, w := range res.Wire {
		if w.Rows != res.Counts[1].Stored || w.RowsPerSec <= 0 {
			t.Errorf("%s: %d rows of %d stored, %.0f rows/s", w.Protocol, w.Rows, res.Counts[1].Stored, w.RowsPerSec)
		}
	}
	day := res.Readings
	if day != (200+6)*96 || res.Batches != 11 {
		t.Errorf("%d readings in %d batches a day", day, res.Batches)
	}
	for _, n := range res.Counts {
		if !n.OK() {
			t.Errorf("count check failed on a sound run: %+v", n)
		}
	}
	if res.Counts[0].Stored != 2*int64(day) || res.Counts[1].Stored != 2*int64(day) {
		t.Errorf("counts %+v; want %d readings each", res.Counts, 2*day)
	}
	// Each HTTP phase against Write under the same load; Write under
	// query load against Write alone.
	if len(res.Ingest) != 4 {
		t.Fatalf("ingest phases: %+v", res.Ingest)
	}
	for i, in := range res.Ingest {
		base := []string{WriteInProcess, WriteInProcess, WriteInProcess, WriteLoaded}[i]
		if in.Name != []string{WriteInProcess, HTTPAlone, WriteLoaded, HTTPLoaded}[i] || in.Baseline != base ||
			in.Readings != int64(day) || in.ReadingsPerSec <= 0 || (i > 0) != (in.PeakRSS > 0) {
			t.Errorf("ingest phase %+v", in)
		}
		if b := res.Ingest[slices.IndexFunc(res.Ingest, func(b Ingest) bool { return b.Name == base })]; in.Ratio != in.ReadingsPerSec/b.ReadingsPerSec {
			t.Errorf("ingest phase %+v: ratio to %s's %.0f readings/s", in, base, b.ReadingsPerSec)
		}
		if in.RatioAlone != in.ReadingsPerSec/res.Ingest[0].ReadingsPerSec {
			t.Errorf("ingest phase %+v: ratio to Write alone's %.0f readings/s", in, res.Ingest[0].ReadingsPerSec)
		}
	}
	if len(res.Queries) != 2 {
		t.Fatalf("query phases: %+v", res.Queries)
	}
	for _, q := range res.Queries {
		if q.Answers == 0 || q.Errors != 0 || q.Rows != 200 || q.P50ms <= 0 || q.P99ms < q.P50ms || q.PeakRSS <= 0 {
			t.Errorf("query phase %+v", q)
		}
	}
	// Typed alone, PostgreSQL alone, typed under ingest: every answer a
	// meter's 96 quarter hours, or it counts as an error.
	if len(res.Portal) != 3 {
		t.Fatalf("portal cases: %+v", res.Portal)
	}
	for i, q := range res.Portal {
		if q.Name != []string{PortalAlone, PortalPostgres, PortalLoaded}[i] || q.Answers == 0 || q.Errors != 0 || q.Rows != 96 ||
			q.Clients != 2 || q.P50ms <= 0 || q.P99ms < q.P50ms || (q.PeakRSS > 0) == (q.Name == PortalPostgres) {
			t.Errorf("portal case %+v", q)
		}
	}
	if res.PortalQPSvsPostgres <= 0 || res.PortalP99UnderIngest != res.Portal[2].P99ms || !strings.Contains(res.PortalSQL, "$4") {
		t.Errorf("portal: %.2f of PostgreSQL's answers/s, p99 under ingest %.2f ms, statement %q",
			res.PortalQPSvsPostgres, res.PortalP99UnderIngest, res.PortalSQL)
	}
	if res.IdleRSS <= 0 || res.PeakRSS < res.IdleRSS {
		t.Errorf("serve RSS: idle %d, peak %d", res.IdleRSS, res.PeakRSS)
	}

	broken := tinyConfig(t, bin)
	broken.dropEvery = 3
	res, err = Run(t.Context(), broken)
	var ce *CountError
	if !errors.As(err, &ce) {
		t.Fatalf("a client that drops acknowledged batches: %v; want a *CountError", err)
	}
	if len(ce.Counts) != 2 || !ce.Counts[0].OK() || ce.Counts[1].OK() || ce.Counts[1].Stored >= ce.Counts[1].Acknowledged {
		t.Errorf("counts of the broken run: %+v", ce.Counts)
	}
	if res == nil || !reflect.DeepEqual(res.Counts, ce.Counts) {
		t.Errorf("the broken run's result does not hold its counts: %+v", res)
	}
}

// TestEncodeCSV: the bodies the HTTP clients send decode, as the server
// reads them, to the readings the baseline writes.
func TestEncodeCSV(t *testing.T) {
	cal, err := metering.NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	f := DefaultConfig().Fixture
	f.Day, f.Meters, f.MetersPerBatch = metering.Date{Year: 2026, Month: 3, Day: 29}, 40, 40 // 92 quarter hours
	bs, err := batches(f, cal)
	if err != nil || len(bs) != 2 {
		t.Fatalf("%d batches: %v", len(bs), err)
	}
	rows := bs[1].rows // a correction among them
	decl := &series.Table{Name: httpTable, TimeModel: series.Interval, Commodity: metering.Electricity,
		Resolutions: []metering.Resolution{metering.QuarterHour}, Width: series.Daily}
	dec, err := ingest.NewDecoder(strings.NewReader(string(encodeCSV(rows))), ingest.CSV, decl)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		rec, err := dec.Next()
		if err != nil {
			t.Fatalf("reading %d: %v", i, err)
		}
		got, want := rec.Reading, rows[i]
		if !got.From.Equal(want.From) || !got.To.Equal(want.To) {
			t.Fatalf("reading %d: %v-%v, want %v-%v", i, got.From, got.To, want.From, want.To)
		}
		got.From, got.To = want.From, want.To
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("reading %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
	if _, err := dec.Next(); err == nil {
		t.Fatal("more readings decoded than encoded")
	}
}
