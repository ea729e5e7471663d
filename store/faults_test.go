package store

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	icetable "github.com/apache/iceberg-go/table"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// gasDay returns meter i's daily value of gas day d (06:00 Berlin, 05:00
// UTC in March) under version v.
func gasDay(i, d int, v uint64, value int64) Reading {
	from := dayN(d).Add(5 * time.Hour)
	return Reading{
		MaLo: malo(500 + i), OBIS: "7-20:99.33.17", Commodity: metering.Gas,
		From: from, To: from.Add(24 * time.Hour), Value: series.Decimal(value),
		Unit: metering.KilowattHour, Quality: metering.TrueValue, Resolution: metering.Day,
		Version: v, VersionScope: "9870000000005:" + from.Format("2006-01"),
	}
}

// acked keeps the readings a store acknowledged, per table.
type acked map[string][]Reading

func (a acked) write(t *testing.T, s *Store, name string, rows []Reading) {
	t.Helper()
	if _, err := s.Write(t.Context(), name, rows); err != nil {
		t.Fatalf("write %s: %v", name, err)
	}
	a[name] = append(a[name], rows...)
}

// check shows that every acknowledged reading of table name is stored
// exactly once, across both tiers.
func (a acked) check(t *testing.T, s *Store, name string) {
	t.Helper()
	res, err := s.Query(t.Context(), name, `SELECT count(*), count(DISTINCT (malo_id, obis_code, "from", version)) FROM readings_versions`)
	if err != nil {
		t.Fatalf("count %s: %v", name, err)
	}
	keys := map[string]bool{}
	for _, r := range a[name] {
		keys[fmt.Sprint(r.MaLo, r.OBIS, r.From.UnixMicro(), r.Version, r.Extra["channel"])] = true
	}
	want := int64(len(keys))
	if res.Rows[0][0] != want || res.Rows[0][1] != want {
		t.Errorf("%s: %v rows, %v distinct; want each of the %d acknowledged once", name, res.Rows[0][0], res.Rows[0][1], want)
	}
}

// metadataFile returns the local path of table name's current metadata.
func metadataFile(t *testing.T, s *Store, name string) string {
	t.Helper()
	tbl, err := s.opts.Catalog.LoadTable(t.Context(), icetable.Identifier{cold.DefaultNamespace, name})
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(tbl.MetadataLocation(), "file://")
}

// TestFaultUnreadableMetadataFailsAlone corrupts the current metadata
// JSON of power. Invariant 8: a store still opens; gas ingests, archives,
// answers and is healthy; every operation on power fails with an error
// naming it, not worth retrying; the maintenance loop serves gas and
// reports power; status names power unhealthy with the error. Once the
// file is repaired, power comes back without a restart, and every
// acknowledged reading of both tables is stored exactly once.
func TestFaultUnreadableMetadataFailsAlone(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	opts := Options{Tables: []Table{power(), gasDaily()}, Query: QueryOptions{CacheDir: t.TempDir()}}
	s := e.open(t, opts)
	if err := s.CreatePartitions(ctx, dayN(0), dayN(10)); err != nil {
		t.Fatal(err)
	}
	a := acked{}
	for d := range 4 {
		a.write(t, s, "power", []Reading{qh(1, d, 4, "A", 1, 1000), qh(2, d, 5, "B", 1, 2000)})
		a.write(t, s, "gas", []Reading{gasDay(1, d, 1, 30000)})
	}
	for _, name := range []string{"power", "gas"} {
		if out, err := s.Archive(ctx, name, dayN(4)); err != nil || !out.Watermark.Equal(dayN(2)) {
			t.Fatalf("archive %s: %+v, %v", name, out, err)
		}
	}

	path := metadataFile(t, s, "power")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"format-version": 2, "table-uuid": `), 0o644); err != nil {
		t.Fatal(err)
	}

	// A store opens beside the broken table, and the old one keeps going.
	s2, err := Open(ctx, Options{Pool: e.pool, Catalog: e.cat, Tables: opts.Tables, Archive: testArchive, Query: opts.Query})
	if err != nil {
		t.Fatalf("Open with power's metadata unreadable: %v", err)
	}
	brokenPower(t, s2) // opened on its hot tier alone
	brokenPower(t, s)  // opened before: each operation reads the metadata anew
	// ... except a write at or above the watermark s last read: the hot
	// tier takes it without reading the cold metadata.
	a.write(t, s, "power", []Reading{qh(3, 4, 4, "A", 1, 1000)})

	// gas: ingest, query both tiers, archive, status, maintenance.
	a.write(t, s2, "gas", []Reading{gasDay(1, 4, 1, 31000), gasDay(2, 1, 2, 29000)}) // the second is a late correction
	res, err := s2.Query(ctx, "gas", `SELECT count(*) FROM readings`)
	if err != nil || res.Rows[0][0] != int64(6) {
		t.Fatalf("gas query: %v, %v", res, err)
	}
	out := s2.Maintenance().Cycle(ctx, dayN(5))
	if len(out.Tables) != 2 {
		t.Fatalf("cycle rows %+v", out.Tables)
	}
	if g := out.Tables[1]; !g.Healthy() || !g.Archive.Watermark.Equal(dayN(3)) {
		t.Errorf("gas in the cycle: %+v", g)
	}
	if p := out.Tables[0]; p.Healthy() || p.Err == nil || !strings.Contains(p.Err.Error(), "power") {
		t.Errorf("power in the cycle: %+v", p)
	}
	if f := out.Failures(); len(f) != 1 || f[0].Name != "power" {
		t.Errorf("failures %+v, want power alone", f)
	}
	sts := s2.Status(ctx, dayN(5))
	if sts[0].Healthy || sts[0].Err == nil || !strings.Contains(sts[0].Err.Error(), "power") {
		t.Errorf("status of power: %+v", sts[0])
	}
	if !sts[1].Healthy || sts[1].Err != nil {
		t.Errorf("status of gas: %+v", sts[1])
	}
	if err := s2.RefreshSystemTables(ctx, dayN(5)); err == nil {
		t.Errorf("refreshing the system tables: no error about power")
	}
	res, err = s2.Query(ctx, "gas", `SELECT "table", healthy, error FROM system.tables ORDER BY "table"`)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 || res.Rows[1][0] != "power" || res.Rows[1][1] != false ||
		!strings.Contains(fmt.Sprint(res.Rows[1][2]), "is not the file its commit recorded") || res.Rows[0][1] != true {
		t.Errorf("system.tables: %v", res.Rows)
	}

	// Repaired, power comes back in both stores without a restart.
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	a.write(t, s2, "power", []Reading{qh(1, 4, 4, "A", 1, 1000)})
	a.write(t, s, "power", []Reading{qh(1, 1, 4, "A", 2, 1100)}) // a late correction
	if sts := s2.Status(ctx, dayN(5)); !sts[0].Healthy {
		t.Errorf("status of repaired power: %+v", sts[0])
	}
	if out := s2.Maintenance().Cycle(ctx, dayN(6)); !out.Healthy() {
		t.Errorf("cycle after the repair: %v", out.Failures())
	}
	for _, name := range []string{"power", "gas"} {
		a.check(t, s2, name)
		a.check(t, s, name)
	}
}

// brokenPower checks that every operation on power that reads its cold
// metadata fails with an error that names it and the file, wraps
// ErrAlteredFile (the metadata is not the one its log entry recorded) and
// is not worth retrying, whether the store opened the table before or
// after (on its hot tier alone). The write carries a late correction.
func brokenPower(t *testing.T, s *Store) {
	t.Helper()
	ctx := t.Context()
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, ErrAlteredFile) || !strings.Contains(err.Error(), "power") || !strings.Contains(err.Error(), "metadata.json") || IsRetryable(err) {
			t.Errorf("%s on broken power: %v (retryable %v), want ErrAlteredFile naming it", op, err, IsRetryable(err))
		}
	}
	_, err := s.Write(ctx, "power", []Reading{qh(3, 4, 4, "A", 1, 1000), qh(3, 0, 4, "A", 1, 1000)})
	check("write", err)
	_, err = s.Query(ctx, "power", `SELECT count(*) FROM readings`)
	check("query", err)
	out, err := s.Archive(ctx, "power", dayN(5))
	check("archive", err)
	if out.Status != ArchiveFailed && out.Status != ArchiveQuarantined {
		t.Errorf("archive outcome of broken power: %v", out.Status)
	}
	_, _, err = s.Watermark(ctx, "power")
	check("watermark", err)
}
