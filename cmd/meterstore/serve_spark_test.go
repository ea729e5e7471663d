package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// sparkRuntimeJar returns the iceberg-spark-runtime jar Spark loads:
// MS_SPARK_ICEBERG_JAR, or where Maven puts it (.ci/spark.sh fetches it).
func sparkRuntimeJar() string {
	if j := os.Getenv("MS_SPARK_ICEBERG_JAR"); j != "" {
		return j
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".m2/repository/org/apache/iceberg/iceberg-spark-runtime-4.1_2.13/1.12.0/iceberg-spark-runtime-4.1_2.13-1.12.0.jar")
}

// correctionCSV returns a second version of the first meter's quarter
// hours of 2026-03-02 in daysCSV, with other values.
func correctionCSV() string {
	var b strings.Builder
	b.WriteString("malo_id,obis_code,from,to,value,unit,quality,resolution,version,version_scope\n")
	m, _ := metering.MaLoFromPrefix(fmt.Sprintf("%010d", 2_000_000_000))
	for q := range 96 {
		from := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC).Add(time.Duration(q) * 15 * time.Minute)
		fmt.Fprintf(&b, "%s,1-1:1.29.0,%s,%s,7.%03d,kWh,220,PT15M,20260303000000,9900000000003:2026-03\n",
			m.String(), from.Format(time.RFC3339), from.Add(15*time.Minute).Format(time.RFC3339), q)
	}
	return b.String()
}

// lateCSV returns corrections of archived days, which go to the cold tier
// unmarked: a higher version of the second meter's 2026-03-03, which wins,
// and a lower one of the first meter's 2026-03-02 (which correctionCSV
// corrected before), which does not. Both are above the watermark of the
// first archival, whose snapshot the time travel counts.
func lateCSV() string {
	var b strings.Builder
	b.WriteString("malo_id,obis_code,from,to,value,unit,quality,resolution,version,version_scope\n")
	for _, c := range []struct {
		meter, day int
		version    string
		value      int
	}{{1, 3, "20260304000000", 9}, {0, 2, "20260301000000", 5}} {
		m, _ := metering.MaLoFromPrefix(fmt.Sprintf("%010d", 2_000_000_000+c.meter))
		for q := range 96 {
			from := time.Date(2026, 3, c.day, 0, 0, 0, 0, time.UTC).Add(time.Duration(q) * 15 * time.Minute)
			fmt.Fprintf(&b, "%s,1-1:1.29.0,%s,%s,%d.%03d,kWh,220,PT15M,%s,9900000000003:2026-03\n",
				m.String(), from.Format(time.RFC3339), from.Add(15*time.Minute).Format(time.RFC3339), c.value, q, c.version)
		}
	}
	return b.String()
}

// snapshotList is what `meterstore snapshots` prints of power: the ids,
// oldest first, and the watermark in force at the last one.
func snapshotList(t *testing.T, cfgPath string) ([]int64, string) {
	t.Helper()
	return tableSnapshots(t, cfgPath, "power")
}

// tableSnapshots is snapshotList of table.
func tableSnapshots(t *testing.T, cfgPath, table string) ([]int64, string) {
	t.Helper()
	out := mustRun(t, "snapshots", "--table", table, "-c", cfgPath)
	var ids []int64
	var watermark string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		f := strings.Fields(l)
		if len(f) != 4 {
			t.Fatalf("snapshots: line %q", l)
		}
		id, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			t.Fatalf("snapshots: line %q: %v", l, err)
		}
		ids, watermark = append(ids, id), f[3]
	}
	if len(ids) == 0 {
		t.Fatalf("snapshots: none\n%s", out)
	}
	return ids, watermark
}

// warehouseFiles lists the files under dir with their sizes.
func warehouseFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		files = append(files, fmt.Sprintf("%s %d", p, info.Size()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestServeSpark has Spark 4.1 with Iceberg 1.12's Spark runtime read an
// archived table through the REST catalog serve mounts at /iceberg, with
// docs/foreign-engines.md's settings as printed there (serve's address and
// the token "spark" of scope catalog in place of its placeholders) and its
// server.catalog_name, as testdata/serve_spark.py describes: listings,
// counts and sums per day and a monthly total per meter resolved in Spark
// SQL agree with POST /v1/query; every metadata table loads and agrees
// with MeterStore's snapshots; VERSION AS OF an earlier snapshot counts
// what was cold then; a missing or wrong credential is refused; ALTER
// TABLE, DROP TABLE ... PURGE, INSERT, DELETE, UPDATE and rewrite_manifests
// fail and leave the snapshots, the files they reference and verify as
// they were (a refused write leaves its data files, manifests and manifest
// list unreferenced). The readings view power_readings, which
// the catalog serves, answers MeterStore's readings below W row for row,
// and the current snapshot's summary holds W. The table holds two
// archival cycles, a superseded version and late corrections (unmarked,
// one winning and one losing), so that the resolution, the view and the
// time travel can fail. It needs pyspark 4.1 and the runtime jar
// (.ci/spark.sh); without them it fails in CI and is skipped elsewhere.
func TestServeSpark(t *testing.T) {
	jar := requireSpark(t)
	days := catalogDays
	f := newArchivedFixture(t, 2, days, docCatalogName(t))
	d, c, ids, w, wh := f.d, f.c, f.ids, f.w, f.wh
	secret := d.addToken(t, "spark", "catalog")
	before := warehouseFiles(t, wh)

	p, base := startTLSServe(t, d.bin, d.cfgPath)
	catalog, conf := docSparkConf(t, base, secret)
	first, _ := metering.MaLoFromPrefix(fmt.Sprintf("%010d", 2_000_000_000))
	spec := map[string]any{
		"base":          base,
		"catalog":       catalog,
		"conf":          conf,
		"watermark_sql": docBlock(t, foreignDoc, "SELECT summary['meterstore.watermark'] FROM "+catalog+".meterstore.power.snapshots"),
		"warehouse":     wh,
		"query_token":   d.queryTok,
		"namespace":     "meterstore",
		"table":         "power",
		"first_malo":    first.String(),
		"days":          days,
		"snapshots":     ids,
		"watermark":     w,
		"early":         map[string]any{"snapshot": f.early, "watermark": f.earlyW},
		"late_rows":     2 * 96,
	}
	specPath := filepath.Join(d.dir, "spec.json")
	data, _ := json.Marshal(spec)
	if err := os.WriteFile(specPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// One session, bounded: Spark's start takes most of it.
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "testdata/serve_spark.py", specPath, jar)
	cmd.Env = append(os.Environ(), "SPARK_LOCAL_IP=127.0.0.1")
	cmd.WaitDelay = time.Minute
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("serve_spark.py (%s):\n%s", time.Since(start).Round(time.Second), sparkLines(string(out), err != nil))
	if err != nil {
		t.Errorf("serve_spark.py: %v", err)
	}
	p.stop(t)
	d.checkLog(t, p.stderr.String(), string(out))

	checkRefusedWrites(t, c, d.cfgPath, wh, before, ids, refusedWriteFile)
}

// The files a refused write leaves (see refusedWriteFile): Iceberg
// writes the data files, then the manifests (rewrite_manifests's are
// optimized-m-*) and the manifest list, and only then asks the catalog to
// commit; Hadoop's local file system writes a .crc beside each.
var (
	refusedDataFile     = regexp.MustCompile(`^\.?[0-9a-f-]+-[0-9]+-[0-9]+\.parquet(\.crc)?$`)
	refusedMetadataFile = regexp.MustCompile(`^\.?(snap-[0-9]+-[0-9]+-[0-9a-f-]+|[0-9a-f-]+-m[0-9]+|optimized-m-[0-9a-f-]+)\.avro(\.crc)?$`)
)

// refusedWriteFile reports whether f, "path size" as warehouseFiles lists
// it, is a file a refused Spark INSERT may leave: a data file under data/,
// a manifest or manifest list under metadata/, or the checksum of one;
// never table metadata or a version hint.
func refusedWriteFile(f string) bool { return writeLeftFile(f, refusedDataFile) }

// writeLeftFile reports whether f ("path size") is a data file under
// data/ whose name data matches, or a manifest or manifest list under
// metadata/.
func writeLeftFile(f string, data *regexp.Regexp) bool {
	path := f[:strings.LastIndexByte(f, ' ')]
	dir, name := filepath.Base(filepath.Dir(path)), filepath.Base(path)
	sep := string(filepath.Separator)
	switch {
	case strings.Contains(path, sep+"data"+sep):
		return data.MatchString(name)
	case dir == "metadata":
		return refusedMetadataFile.MatchString(name)
	}
	return false
}

// TestRefusedWriteFile: what a refused INSERT left in a run of
// TestServeSpark is accepted, table metadata and files elsewhere are not.
func TestRefusedWriteFile(t *testing.T) {
	wh := filepath.Join("wh", "meterstore", "power")
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{filepath.Join(wh, "data", "from_month=2026-03", "00000-25-c414080a-ebfc-4abc-a8c2-10bf706f134d-0-00001.parquet"), true},
		{filepath.Join(wh, "data", "from_month=2026-03", ".00000-25-c414080a-ebfc-4abc-a8c2-10bf706f134d-0-00001.parquet.crc"), true},
		{filepath.Join(wh, "metadata", "be4643b9-4145-47d1-be9e-9136eac5f7e0-m0.avro"), true},
		{filepath.Join(wh, "metadata", ".be4643b9-4145-47d1-be9e-9136eac5f7e0-m0.avro.crc"), true},
		{filepath.Join(wh, "metadata", "snap-8770705109768497360-1-be4643b9-4145-47d1-be9e-9136eac5f7e0.avro"), true},
		{filepath.Join(wh, "metadata", "optimized-m-b7326a6c-5701-4865-bf48-7aa5c7401842.avro"), true},
		{filepath.Join(wh, "metadata", ".optimized-m-b7326a6c-5701-4865-bf48-7aa5c7401842.avro.crc"), true},
		{filepath.Join(wh, "metadata", "v12.metadata.json"), false},
		{filepath.Join(wh, "metadata", "00012-be4643b9-4145-47d1-be9e-9136eac5f7e0.metadata.json"), false},
		{filepath.Join(wh, "metadata", "version-hint.text"), false},
		{filepath.Join(wh, "data", "from_month=2026-03", "x.avro"), false},
		{filepath.Join(wh, "be4643b9-4145-47d1-be9e-9136eac5f7e0-m0.avro"), false},
	} {
		if got := refusedWriteFile(tc.path + " 42"); got != tc.ok {
			t.Errorf("%s: %v, want %v", tc.path, got, tc.ok)
		}
	}
}

// sparkLines returns the script's own lines of its output (Spark logs
// much besides), or all of it when it failed.
func sparkLines(out string, failed bool) string {
	if failed {
		return out
	}
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		// Spark's stage progress, on standard error, ends in a carriage
		// return, not a newline: what follows it on the line is ours.
		l = l[strings.LastIndex(l, "\r")+1:]
		if strings.HasPrefix(l, "ok: ") || strings.HasPrefix(l, "spark: ") || strings.HasPrefix(l, "refused: ") || strings.HasPrefix(l, "pitfall: ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
