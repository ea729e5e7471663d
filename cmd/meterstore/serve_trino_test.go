package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// trinoCatalog is the name of the Trino catalog file the tests write and
// the default catalog serve's views name (server.catalog_name), as README.md
// and docs/foreign-engines.md give them (TestDocSnippets).
const trinoCatalog = "lake"

// TestServeTrino has a single-node Trino 476 read an archived table
// through the REST catalog serve mounts at /iceberg with README.md's
// catalog file as printed there (serve's address and the token "trino" of
// scope catalog in place of its placeholders) and server.catalog_name as
// docs/foreign-engines.md sets it, on the fixture of TestServeSpark (a
// superseded version, two archival cycles, late corrections below W): counts and sums per day equal
// MeterStore's readings_versions below W; the readings view power_readings
// equals MeterStore's readings below W row for row and per meter-month, as
// does Trino's own resolution over the table; $snapshots and $files agree
// with MeterStore's snapshots; FOR VERSION AS OF the first archival's
// snapshot equals `meterstore query --as-of-snapshot`; W is what the
// document's statement reads; INSERT, DELETE, UPDATE, optimize, DROP
// TABLE, ALTER TABLE and the view's writes are refused and leave the
// snapshots and every file as they were, besides the files the writes
// wrote before their commits were refused, which verify reports.
// TestReadingsViewEngines times the view. It needs Trino 476 and Java 25
// (.ci/trino.sh); without them it fails in CI and is skipped elsewhere.
func TestServeTrino(t *testing.T) {
	in, err := findTrino()
	if err != nil {
		requireTool(t, "Trino 476 and Java 25 are required: .ci/trino.sh installs them", err)
	}
	days := catalogDays
	f := newArchivedFixture(t, 2, days, docCatalogName(t))
	d, c := f.d, f.c
	secret := d.addToken(t, "trino", "catalog")
	before := warehouseFiles(t, f.wh)

	// MeterStore's answers, from its own query command.
	below := fmt.Sprintf(`"from" < TIMESTAMPTZ '%s'`, f.w)
	perDay := msQuery(t, c, nil, `SELECT strftime("from" AT TIME ZONE 'UTC', '%Y-%m-%d') AS day, count(*) AS n, sum(value) AS s
		FROM readings_versions WHERE `+below+` GROUP BY 1`)
	monthly := msQuery(t, c, nil, `SELECT malo_id, strftime("from" AT TIME ZONE 'UTC', '%Y-%m') AS month, count(*) AS n, sum(value) AS s
		FROM readings WHERE `+below+` GROUP BY 1, 2`)
	rows := msQuery(t, c, nil, `SELECT malo_id, strftime("from" AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S') AS f,
		CAST(version AS VARCHAR) AS v, CAST(value AS VARCHAR) AS x FROM readings WHERE `+below)
	earlyBelow := fmt.Sprintf(`"from" < TIMESTAMPTZ '%s'`, f.earlyW)
	asOf := []string{"--as-of-snapshot", fmt.Sprint(f.early)}
	earlyTotal := msQuery(t, c, asOf, `SELECT count(*) AS n, sum(value) AS s FROM readings_versions WHERE `+earlyBelow)
	earlyMonthly := msQuery(t, c, asOf, `SELECT malo_id, strftime("from" AT TIME ZONE 'UTC', '%Y-%m') AS month, count(*) AS n, sum(value) AS s
		FROM readings WHERE `+earlyBelow+` GROUP BY 1, 2`)
	if len(perDay) != days || len(rows) == 0 || len(earlyTotal) != 1 {
		t.Fatalf("MeterStore answers %d days, %d readings, %v as of snapshot %d", len(perDay), len(rows), earlyTotal, f.early)
	}

	p, base := startTLSServe(t, d.bin, d.cfgPath)
	name, props := docTrinoCatalog(t, base, secret)
	tr := startTrino(t, in, filepath.Join(d.dir, "trino"), map[string]map[string]string{name: props})
	q := func(sql string) trinoResult { return tr.mustQuery(t, 2*time.Minute, sql) }
	tw := fmt.Sprintf(`"from" < from_iso8601_timestamp('%s')`, f.w)

	// The table: every version, per day.
	same(t, "per day", q(`SELECT format_datetime("from", 'yyyy-MM-dd'), count(*), sum(value) FROM power WHERE `+tw+` GROUP BY 1`).rows, perDay)
	total := 0
	for _, r := range perDay {
		total += atoiT(t, r[1])
	}
	marks := map[string]int{}
	for _, r := range q(`SELECT CAST(superseded AS varchar), count(*) FROM power GROUP BY 1`).rows {
		marks[str(r[0])] = atoiT(t, str(r[1]))
	}
	if marks["<nil>"] != 2*96 || marks["true"] == 0 || marks["false"] == 0 {
		t.Fatalf("the table's marks: %v (<nil>: late corrections, unmarked; want 192)", marks)
	}

	// The metadata tables: the snapshots MeterStore lists, the files of
	// every row, W in the current snapshot's summary.
	var snaps []int64
	for _, r := range q(`SELECT snapshot_id FROM "power$snapshots" ORDER BY committed_at`).rows {
		snaps = append(snaps, int64(atoiT(t, str(r[0]))))
	}
	if !slices.Equal(snaps, f.ids) {
		t.Errorf("$snapshots: %v; MeterStore's snapshots: %v", snaps, f.ids)
	}
	files := q(`SELECT count(*), sum(record_count) FROM "power$files"`).rows
	if len(files) != 1 || atoiT(t, str(files[0][0])) == 0 || atoiT(t, str(files[0][1])) != total {
		t.Errorf("$files: %v; the table holds %d rows", files, total)
	}
	wm := q(docBlock(t, foreignDoc, "SELECT summary['meterstore.watermark'] FROM "+trinoCatalog+`.meterstore."power$snapshots"`)).rows
	if len(wm) != 1 || !sameInstant(str(wm[0][0]), f.w) {
		t.Errorf("the current snapshot's summary holds the watermark %v; MeterStore's is %s", wm, f.w)
	}

	// The readings view, resolved by Trino from its trino SQL, and
	// Trino's own resolution by the rule over the table: MeterStore's
	// readings below W.
	viewMonthly := q(`SELECT malo_id, format_datetime("from", 'yyyy-MM'), count(*), sum(value) FROM power_readings GROUP BY 1, 2`)
	same(t, "power_readings per meter-month", viewMonthly.rows, monthly)
	same(t, "power_readings row for row", q(`SELECT malo_id, format_datetime("from", 'yyyy-MM-dd''T''HH:mm:ss'),
		CAST(version AS varchar), CAST(value AS varchar) FROM power_readings`).rows, rows)
	const ranked = `SELECT malo_id, format_datetime("from", 'yyyy-MM'), count(*), sum(value) FROM (
		SELECT *, row_number() OVER (PARTITION BY malo_id, obis_code, "from" ORDER BY version DESC, recorded_at DESC) AS rank
		FROM power %s) WHERE rank = 1 GROUP BY 1, 2`
	same(t, "resolved by the rule", q(fmt.Sprintf(ranked, "")).rows, monthly)
	if len(rows) >= total {
		t.Errorf("the view has %d rows, the table %d: nothing was resolved away", len(rows), total)
	}
	// The command-line client, as a user would run it.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	out, err := tr.cli(ctx, trinoCatalog, "meterstore", "SELECT count(*) FROM power_readings")
	cancel()
	if err != nil || strings.TrimSpace(out) != fmt.Sprintf("%q", fmt.Sprint(len(rows))) {
		t.Errorf("trino-cli: count(*) of power_readings: %q, %v; want %d", out, err, len(rows))
	}

	// Time travel: FOR VERSION AS OF the first archival's snapshot is what
	// MeterStore answers as of it.
	same(t, fmt.Sprintf("FOR VERSION AS OF %d", f.early),
		q(fmt.Sprintf(`SELECT count(*), sum(value) FROM power FOR VERSION AS OF %d`, f.early)).rows, earlyTotal)
	same(t, fmt.Sprintf("resolved FOR VERSION AS OF %d", f.early),
		q(fmt.Sprintf(ranked, fmt.Sprintf("FOR VERSION AS OF %d", f.early))).rows, earlyMonthly)
	if n := atoiT(t, earlyTotal[0][0]); n == 0 || n >= total {
		t.Errorf("as of snapshot %d: %d rows of %d", f.early, n, total)
	}

	// Writes are refused and change nothing. An INSERT, DELETE, UPDATE or
	// optimize writes its data or delete files, manifest and manifest list
	// before its commit is refused.
	for _, w := range []struct{ sql, want string }{
		{`INSERT INTO power SELECT * FROM power LIMIT 1`, "Server does not support endpoint"},
		{`DELETE FROM power WHERE malo_id = (SELECT min(malo_id) FROM power) AND "from" < from_iso8601_timestamp('2026-03-02T00:00:00Z')`, "Server does not support endpoint"},
		{`UPDATE power SET value = value + 1 WHERE malo_id = (SELECT min(malo_id) FROM power) AND "from" < from_iso8601_timestamp('2026-03-02T00:00:00Z')`, "Server does not support endpoint"},
		{`ALTER TABLE power EXECUTE optimize`, "Server does not support endpoint"},
		{`DROP TABLE power`, "Server does not support endpoint"},
		{`ALTER TABLE power ADD COLUMN probe varchar`, "Server does not support endpoint"},
		{`CREATE OR REPLACE VIEW power_readings AS SELECT 1 AS x`, "Server does not support endpoint"},
		{`DROP VIEW power_readings`, "Server does not support endpoint"},
	} {
		was := warehouseFiles(t, f.wh)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		_, err := tr.query(ctx, trinoCatalog, "meterstore", w.sql)
		cancel()
		left := len(warehouseFiles(t, f.wh)) - len(was)
		t.Logf("refused: %s (%d new files) | %v", strings.Join(strings.Fields(w.sql)[:2], " "), left, err)
		if !errors.Is(err, errTrinoQuery) || !strings.Contains(err.Error(), w.want) {
			t.Errorf("%s: %v; want an error saying %q", w.sql, err, w.want)
		}
	}
	if n := q(`SELECT count(*) FROM power_readings`).rows; len(n) != 1 || atoiT(t, str(n[0][0])) != len(rows) {
		t.Errorf("after the writes, power_readings holds %v rows, not %d", n, len(rows))
	}
	tr.stop(t)
	p.stop(t)
	d.checkLog(t, p.stderr.String(), "")
	checkRefusedWrites(t, c, d.cfgPath, f.wh, before, f.ids, trinoWriteFile)
}

// trinoProperties returns README.md's Trino catalog file for serve's REST
// catalog at base with the credential of the token "lake" (secret tok,
// scope catalog) in place of the token "trino" it names.
func trinoProperties(t *testing.T, base, tok string) map[string]string {
	t.Helper()
	_, props := docTrinoCatalog(t, base, tok)
	props["iceberg.rest-catalog.oauth2.credential"] = "lake:" + tok
	return props
}

// trinoDataFile is the name Trino 476 gives a data file it writes.
var trinoDataFile = regexp.MustCompile(`^[0-9a-z_]+-[0-9a-f-]+\.parquet$`)

// trinoWriteFile reports whether f ("path size") is a file a refused
// Trino INSERT may leave: a data file under data/, or a manifest or
// manifest list under metadata/ (Trino writes no checksums).
func trinoWriteFile(f string) bool { return writeLeftFile(f, trinoDataFile) }

// median returns the median of ds.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// planOperator is a line of Trino's text plan that names an operator.
var planOperator = regexp.MustCompile(`^[\s│]*([└├]─ )?([A-Z][A-Za-z]+)\[`)

// planOutline returns the operator lines of Trino's EXPLAIN text, each cut
// to 160 characters, and the fragments' headers.
func planOutline(plan string) string {
	var out []string
	for _, l := range strings.Split(plan, "\n") {
		if planOperator.MatchString(l) || strings.HasPrefix(l, "Fragment") {
			if r := []rune(l); len(r) > 160 {
				l = string(r[:160]) + "…"
			}
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// msQuery returns the rows, without the header, of meterstore query
// --table power --format csv with flags.
func msQuery(t *testing.T, c, flags []string, sql string) [][]string {
	t.Helper()
	args := append(append([]string{"query", "--table", "power", "--format", "csv", "--refresh=false"}, flags...), sql)
	out := mustRun(t, append(args, c...)...)
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("query %s: %v\n%s", sql, err, out)
	}
	return recs[1:]
}

// same fails t unless a foreign engine's rows got (Trino's protocol values) hold MeterStore's rows want, in any
// order, values compared as numbers where both are numbers.
func same(t *testing.T, what string, got [][]any, want [][]string) {
	t.Helper()
	key := func(r []string) string { return strings.Join(r, "|") }
	norm := func(r []string) []string {
		out := slices.Clone(r)
		for i, v := range out {
			if x, ok := new(big.Rat).SetString(v); ok {
				out[i] = x.RatString()
			}
		}
		return out
	}
	var g, w []string
	for _, r := range got {
		s := make([]string, len(r))
		for i, v := range r {
			s[i] = str(v)
		}
		g = append(g, key(norm(s)))
	}
	for _, r := range want {
		w = append(w, key(norm(r)))
	}
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Errorf("%s: %d rows, MeterStore %d; the engine's first %v, MeterStore's %v",
			what, len(g), len(w), g[:min(len(g), 5)], w[:min(len(w), 5)])
		return
	}
	t.Logf("%s: %d rows, each as MeterStore's (first %v)", what, len(g), g[:min(len(g), 1)])
}

// str renders a value of Trino's statement protocol as text; a null is
// "<nil>".
func str(v any) string {
	if v == nil {
		return "<nil>"
	}
	return fmt.Sprint(v)
}

func atoiT(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}

// sameInstant reports whether two RFC 3339 times are the same instant.
func sameInstant(a, b string) bool {
	x, err1 := time.Parse(time.RFC3339Nano, a)
	y, err2 := time.Parse(time.RFC3339Nano, b)
	return err1 == nil && err2 == nil && x.Equal(y)
}
