package cold

import (
	"cmp"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/consensus"
	"github.com/meterstore/meterstore/consensus/bloblog"
	"github.com/meterstore/meterstore/internal/s3test"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// env is a warehouse on the local disk with its log on the same store, and
// two catalogs over it: one that runs the watermark check, as a deployment
// does, and one that does not, as a foreign tool would commit.
type env struct {
	dir     string
	wh      catalog.Warehouse
	log     consensus.Log
	cat     *catalog.Catalog // with WatermarkCheck
	foreign *catalog.Catalog // without it
	tier    *Tier
}

func newEnv(t testing.TB, opts Options) *env {
	t.Helper()
	dir := t.TempDir()
	e := newEnvAt(t, "file://"+dir, opts)
	e.dir = dir
	return e
}

// newS3Env is newEnv on a fresh bucket of the S3 test server.
func newS3Env(t *testing.T) *env {
	t.Helper()
	return newEnvAt(t, s3test.URL(t, s3test.NewBucket(t)), Options{})
}

// newEnvAt is newEnv with the warehouse at url.
func newEnvAt(t testing.TB, url string, opts Options) *env {
	t.Helper()
	wh, err := catalog.OpenWarehouse(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Bucket.Close() })
	l, err := bloblog.New(wh.Bucket, "_log/")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New(catalog.Options{Warehouse: wh, Log: l, Check: WatermarkCheck()})
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := catalog.New(catalog.Options{Warehouse: wh, Log: l})
	if err != nil {
		t.Fatal(err)
	}
	tier, err := New(cat, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &env{wh: wh, log: l, cat: cat, foreign: foreign, tier: tier}
}

// ensure declares tab in e's tier.
func (e *env) ensure(t testing.TB, tab *series.Table) *Table {
	t.Helper()
	h, err := e.tier.Ensure(t.Context(), tab)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// files returns the files under the warehouse whose names end in suffix,
// relative to it, sorted.
func (e *env) files(t *testing.T, suffix string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(e.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, suffix) {
			rel, _ := filepath.Rel(e.dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// loadProfile declares a 15-minute electricity load profile with an
// identity column, a text attribute and a bigint attribute.
func loadProfile(name string) *series.Table {
	return &series.Table{
		Name:        name,
		TimeModel:   series.Interval,
		Commodity:   metering.Electricity,
		Resolutions: []metering.Resolution{metering.QuarterHour},
		Columns: []series.Column{
			{Name: "channel", Identity: true, Values: []string{"A", "B"}},
			{Name: "source"},
			{Name: "seq", Type: series.BigInt},
		},
		Width:    series.Monthly,
		Headroom: 31 * 24 * time.Hour,
	}
}

// registers declares a point table of register readings.
func registers(name string) *series.Table {
	return &series.Table{Name: name, TimeModel: series.Point, Commodity: metering.Gas, Width: series.Monthly}
}

var (
	cal      = mustCalendar()
	jan2026  = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	feb2026  = time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	mar2026  = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	recorded = time.Date(2026, 3, 20, 8, 30, 0, 123456000, time.UTC)
)

func mustCalendar() *metering.Calendar {
	c, err := metering.NewCalendar()
	if err != nil {
		panic(err)
	}
	return c
}

// malo returns the i-th market location id of the fixtures.
func malo(i int) string {
	m, err := metering.MaLoFromPrefix(fmt.Sprintf("5%09d", 100000+i))
	if err != nil {
		panic(err)
	}
	return m.String()
}

// quarterHours returns n quarter-hour readings of location i from start,
// with values that exercise every digit of numeric(18,6).
func quarterHours(i int, start time.Time, n int) []series.Reading {
	out := make([]series.Reading, 0, n)
	for k := range n {
		out = append(out, quarterHour(i, start, k))
	}
	return out
}

// quarterHour returns the k-th quarter hour of location i from start.
func quarterHour(i int, start time.Time, k int) series.Reading {
	from := start.Add(time.Duration(k) * 15 * time.Minute)
	r := series.Reading{
		MaLo:         malo(i),
		OBIS:         "1-1:1.29.0",
		From:         from,
		To:           from.Add(15 * time.Minute),
		Value:        series.Decimal(int64(k)*1_000_003 + int64(i)),
		Unit:         metering.KilowattHour,
		Quality:      metering.TrueValue,
		Resolution:   metering.QuarterHour,
		Version:      20260101000000 + uint64(k%7),
		VersionScope: "9900000000003:" + from.Format("2006-01"),
		Extra:        map[string]string{"channel": "A"},
		RecordedAt:   recorded,
		BalancingDay: cal.BalancingDay(from, metering.Electricity),
	}
	if k%3 == 0 {
		r.Extra["seq"] = fmt.Sprint(-int64(k) * 1_000_000_007)
	}
	if k%5 == 0 {
		r.MeLo = "DE0001234567890123456789012345678"
		r.Subject = "p-17"
		r.Extra["source"] = "MSCONS"
	}
	return r
}

// normalize fills in what a scan returns for what a writer may leave to
// defaults, so that readings compare with reflect.DeepEqual.
func normalize(t *series.Table, rs []series.Reading) []series.Reading {
	out := make([]series.Reading, len(rs))
	for i, r := range rs {
		r.Commodity = t.CommodityOf(&r)
		r.From, r.To, r.RecordedAt = r.From.UTC(), r.To.UTC(), r.RecordedAt.UTC()
		if len(r.Extra) == 0 {
			r.Extra = nil
		} else {
			r.Extra = maps.Clone(r.Extra)
		}
		out[i] = r
	}
	slices.SortFunc(out, func(a, b series.Reading) int {
		if c := strings.Compare(seriesKey(t, &a), seriesKey(t, &b)); c != 0 {
			return c
		}
		if c := a.From.Compare(b.From); c != 0 {
			return c
		}
		return cmp.Compare(a.Version, b.Version)
	})
	return out
}

// collect gathers a stream of readings.
func collect(t *testing.T, rows Rows) []series.Reading {
	t.Helper()
	var out []series.Reading
	for r, err := range rows {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// sameReadings fails t unless got and want hold the same readings.
func sameReadings(t *testing.T, tab *series.Table, got, want []series.Reading) {
	t.Helper()
	got, want = normalize(tab, got), normalize(tab, want)
	if len(got) != len(want) {
		t.Fatalf("got %d readings, want %d", len(got), len(want))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("reading %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

// foreignAppend commits an empty append without any meterstore summary key
// through the catalog without the check, as another engine would.
func (e *env) foreignAppend(t *testing.T, h *Table) *table.Table {
	t.Helper()
	ice, err := e.foreign.LoadTable(t.Context(), h.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	tx := ice.NewTransaction()
	if err := tx.AddFiles(t.Context(), nil, iceberg.Properties{"engine": "spark"}, true); err != nil {
		t.Fatal(err)
	}
	next, err := tx.Commit(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// summary returns the summary of the table's current snapshot.
func (e *env) summary(t *testing.T, h *Table) iceberg.Properties {
	t.Helper()
	ice, err := e.tier.Iceberg(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	s := ice.CurrentSnapshot()
	if s == nil || s.Summary == nil {
		t.Fatal("no current snapshot")
	}
	return s.Summary.Properties
}

// archive archives rows as the window [from, to) with W = to.
func (e *env) archive(t *testing.T, h *Table, from, to time.Time, rows []series.Reading) Commit {
	t.Helper()
	c, err := e.tier.Archive(t.Context(), h, to, from, to, Readings(rows))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
