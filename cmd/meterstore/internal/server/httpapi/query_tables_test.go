package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/metrics"
	"github.com/meterstore/meterstore/internal/metrics/metricstest"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

// openTwoTables opens a store with the tables power and feedin, and
// writes 4 quarter hours of today to power and 2 to feedin.
func openTwoTables(t *testing.T, opts ...store.ConfigOption) *store.Store {
	dir := t.TempDir()
	src := fmt.Sprintf("[postgres]\nurl = %q\ndata_dir = %q\n[warehouse]\nurl = %q\n"+
		"[[table]]\nname = \"power\"\nresolutions = [\"PT15M\"]\n[[table]]\nname = \"feedin\"\nresolutions = [\"PT15M\"]\n",
		pgtest.NewDB(t), dir, "file://"+filepath.Join(dir, "wh"))
	cfg, err := config.Parse([]byte(src), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.OpenConfig(t.Context(), cfg, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	if err := s.EnsurePartitions(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	for name, n := range map[string]int{"power": 4, "feedin": 2} {
		var rows []store.Reading
		for i := range n {
			from := day.Add(time.Duration(i) * 15 * time.Minute)
			rows = append(rows, store.Reading{
				MaLo: "20000000008", OBIS: "1-1:1.29.0", Commodity: metering.Electricity, From: from, To: from.Add(15 * time.Minute),
				Value: series.Decimal(1_000_000), Unit: metering.KilowattHour, Quality: metering.TrueValue,
				Resolution: metering.QuarterHour, Version: 1, VersionScope: "9900000000003:" + day.Format("2006-01"),
			})
		}
		if _, err := s.Write(t.Context(), name, rows); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestQueryOtherTables: a statement on power that names feedin.readings
// reads both, X-MeterStore-Tables reports each table read, and a token
// limited to power is refused, whichever table the request names.
func TestQueryOtherTables(t *testing.T) {
	s := openTwoTables(t)
	reporting, reportingTok := token(t, "reporting", config.ScopeQuery)
	powerOnly, powerTok := token(t, "power-reports", config.ScopeQuery)
	powerOnly.Tables = []string{"power"}
	h, err := New(s, Options{Tokens: []config.Token{reporting, powerOnly}})
	if err != nil {
		t.Fatal(err)
	}
	doc := parseOpenAPI(t)
	const sql = `SELECT (SELECT count(*) FROM readings) AS p, (SELECT count(*) FROM feedin.readings) AS f`

	w := queryHTTP(t, h, t.Context(), reportingTok, "text/csv", queryBody("power", sql))
	doc.conforms(t, "POST", queryPath, w)
	if w.Code != 200 || w.Body.String() != "p,f\n4,2\n" {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	var tables []tableRead
	if err := json.Unmarshal([]byte(w.Header().Get("X-MeterStore-Tables")), &tables); err != nil {
		t.Fatalf("X-MeterStore-Tables %q: %v", w.Header().Get("X-MeterStore-Tables"), err)
	}
	if len(tables) != 2 || tables[0].Table != "power" || tables[1].Table != "feedin" ||
		strings.Join(tables[1].Tiers, ",") != "hot" || tables[1].Watermark != "" {
		t.Errorf("X-MeterStore-Tables %q", w.Header().Get("X-MeterStore-Tables"))
	}

	for _, table := range []string{"power", "feedin"} {
		w := queryHTTP(t, h, t.Context(), powerTok, "text/csv", queryBody(table, sql))
		doc.conforms(t, "POST", queryPath, w)
		if w.Code != 403 || !strings.Contains(w.Body.String(), `"forbidden"`) || !strings.Contains(w.Body.String(), "feedin") {
			t.Errorf("power-only token, table %s: %d %s", table, w.Code, w.Body)
		}
	}
	if w := queryHTTP(t, h, t.Context(), powerTok, "text/csv", queryBody("power", `SELECT count(*) FROM readings`)); w.Code != 200 {
		t.Errorf("power-only token on power alone: %d %s", w.Code, w.Body)
	}
	w = queryHTTP(t, h, t.Context(), reportingTok, "text/csv", queryBody("power", `SELECT count(*) FROM nosuch.readings`))
	doc.conforms(t, "POST", queryPath, w)
	if w.Code != 400 || !strings.Contains(w.Body.String(), `"invalid_query"`) {
		t.Errorf("an undeclared table: %d %s", w.Code, w.Body)
	}
}

// TestQueryHeadersWithoutTable: a statement that names power.readings
// without "table" in the body has X-MeterStore-Watermark and
// X-MeterStore-Tiers, and the Arrow schema's metadata, of power, as the
// same statement with "table" has them and as Flight SQL has them; one
// that reads two tables, each split at its own watermark, has them empty.
func TestQueryHeadersWithoutTable(t *testing.T) {
	s := openTwoTables(t)
	reporting, tok := token(t, "reporting", config.ScopeQuery)
	h, err := New(s, Options{Tokens: []config.Token{reporting}})
	if err != nil {
		t.Fatal(err)
	}
	doc := parseOpenAPI(t)
	for _, c := range []struct {
		table, sql, tiers string
	}{
		{"power", `SELECT count(*) AS n FROM readings`, "hot"},
		{"", `SELECT count(*) AS n FROM power.readings`, "hot"},
		{"", `SELECT count(*) AS n FROM power.readings p JOIN feedin.readings f USING (malo_id)`, ""},
	} {
		w := queryHTTP(t, h, t.Context(), tok, "text/csv", queryBody(c.table, c.sql))
		doc.conforms(t, "POST", queryPath, w)
		if w.Code != 200 {
			t.Fatalf("table %q, %s: %d %s", c.table, c.sql, w.Code, w.Body)
		}
		if got := w.Header().Get("X-MeterStore-Tiers"); got != c.tiers {
			t.Errorf("table %q, %s: X-MeterStore-Tiers %q; want %q", c.table, c.sql, got, c.tiers)
		}
		if _, ok := w.Header()["X-Meterstore-Watermark"]; !ok {
			t.Errorf("table %q, %s: no X-MeterStore-Watermark", c.table, c.sql)
		}
		w = queryHTTP(t, h, t.Context(), tok, mediaArrow, queryBody(c.table, c.sql))
		if w.Code != 200 {
			t.Fatalf("table %q, %s, Arrow: %d %s", c.table, c.sql, w.Code, w.Body)
		}
		sc, _, err := readArrow(t, w.Body, []string{"BIGINT"})
		if err != nil {
			t.Fatal(err)
		}
		if tiers, _ := sc.Metadata().GetValue("meterstore.tiers"); tiers != c.tiers {
			t.Errorf("table %q, %s: Arrow meterstore.tiers %q; want %q", c.table, c.sql, tiers, c.tiers)
		}
	}
}

// TestQueryBisectionRefused: a token limited to feedin sends a statement
// over feedin that fails only when a value of power passes a bound. It is
// refused with the same 403 whatever the bound, before power is read: the
// hot scan counter of power stays where it was. An unlimited token shows
// that the statement does tell the bound, and moves the counter.
func TestQueryBisectionRefused(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	s := openTwoTables(t, store.WithMeters(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	reporting, reportingTok := token(t, "reporting", config.ScopeQuery)
	feedinOnly, feedinTok := token(t, "feedin-reports", config.ScopeQuery)
	feedinOnly.Tables = []string{"feedin"}
	h, err := New(s, Options{Tokens: []config.Token{reporting, feedinOnly}})
	if err != nil {
		t.Fatal(err)
	}
	probe := func(bound string) string {
		return queryBody("feedin", `SELECT CASE WHEN (SELECT max(value) FROM power.readings) > `+bound+
			` THEN error('above') END AS probe, count(*) AS n FROM readings`)
	}
	// Unlimited, the statement reads power and its answer tells the bound.
	if w := queryHTTP(t, h, t.Context(), reportingTok, "text/csv", probe("0.5")); w.Code != 400 || !strings.Contains(w.Body.String(), `"invalid_query"`) {
		t.Fatalf("reporting, bound below: %d %s", w.Code, w.Body)
	}
	if w := queryHTTP(t, h, t.Context(), reportingTok, "text/csv", probe("5")); w.Code != 200 {
		t.Fatalf("reporting, bound above: %d %s", w.Code, w.Body)
	}
	scanned := scannedRows(t, reader, "power")
	if scanned == 0 {
		t.Fatal("the unlimited token's statements scanned no row of power: the counter shows nothing")
	}
	var bodies []string
	for _, bound := range []string{"0.5", "5"} {
		w := queryHTTP(t, h, t.Context(), feedinTok, "text/csv", probe(bound))
		if w.Code != 403 || !strings.Contains(w.Body.String(), `"forbidden"`) || !strings.Contains(w.Body.String(), "power") {
			t.Fatalf("feedin only, bound %s: %d %s", bound, w.Code, w.Body)
		}
		bodies = append(bodies, w.Body.String())
	}
	if bodies[0] != bodies[1] {
		t.Fatalf("the refusal depends on the data: %q, %q", bodies[0], bodies[1])
	}
	if got := scannedRows(t, reader, "power"); got != scanned {
		t.Fatalf("a refused statement scanned %d rows of power", got-scanned)
	}
	// system.tables shows the token its own table alone.
	if err := s.RefreshSystemTables(t.Context(), time.Now()); err != nil {
		t.Fatal(err)
	}
	w := queryHTTP(t, h, t.Context(), feedinTok, "text/csv", queryBody("feedin", `SELECT "table" FROM system.tables ORDER BY 1`))
	if w.Code != 200 || strings.Contains(w.Body.String(), "power") {
		t.Fatalf("system.tables for feedin only: %d %s", w.Code, w.Body)
	}
	// So does GET /v1/status.
	code, out, _ := call(t, h, "GET", "/v1/status", feedinTok)
	if tables, _ := out["tables"].([]any); code != 200 || len(tables) != 1 || tables[0].(map[string]any)["table"] != "feedin" {
		t.Fatalf("status for feedin only: %d %v", code, out)
	}
	// A file the engine refuses is the client's doing, not a 500.
	w = queryHTTP(t, h, t.Context(), reportingTok, "text/csv", queryBody("feedin", `SELECT * FROM read_text('/etc/hostname')`))
	if w.Code != 403 || !strings.Contains(w.Body.String(), `"not_permitted"`) {
		t.Fatalf("read_text: %d %s", w.Code, w.Body)
	}
}

// scannedRows returns the rows of table the hot tier scanned for queries,
// as the store's metrics count them.
func scannedRows(t *testing.T, reader *sdkmetric.ManualReader, table string) int64 {
	t.Helper()
	return metricstest.Value(t, reader, "meterstore.scan.rows", attribute.String(metrics.AttrTable, table))
}

// TestQueryParams: "params" binds a statement's placeholders, in order or
// by name, with the answer the literals give; a value that looks like SQL
// stays a value; params of another shape are a bad request.
func TestQueryParams(t *testing.T) {
	s := openTwoTables(t)
	reporting, tok := token(t, "reporting", config.ScopeQuery)
	h, err := New(s, Options{Tokens: []config.Token{reporting}})
	if err != nil {
		t.Fatal(err)
	}
	post := func(body string) (int, string) {
		w := queryHTTP(t, h, t.Context(), tok, "text/csv", body)
		return w.Code, w.Body.String()
	}
	day := time.Now().UTC().Truncate(24 * time.Hour)
	code, want := post(queryBody("", fmt.Sprintf(`SELECT count(*) AS n FROM power.readings WHERE "from" >= TIMESTAMPTZ '%s' AND malo_id = '20000000008'`,
		day.Add(30*time.Minute).Format("2006-01-02 15:04:05+00"))))
	if code != 200 || want != "n\n2\n" {
		t.Fatalf("literals: %d %q", code, want)
	}
	from := day.Add(30 * time.Minute).Format(time.RFC3339)
	for _, body := range []string{
		`{"sql": "SELECT count(*) AS n FROM power.readings WHERE \"from\" >= $1 AND malo_id = $2", "params": ["` + from + `", "20000000008"]}`,
		`{"sql": "SELECT count(*) AS n FROM power.readings WHERE \"from\" >= ? AND malo_id = ?", "params": ["` + from + `", "20000000008"]}`,
		`{"sql": "SELECT count(*) AS n FROM power.readings WHERE \"from\" >= $from AND malo_id = $malo", "params": {"malo": "20000000008", "from": "` + from + `"}}`,
	} {
		if code, got := post(body); code != 200 || got != want {
			t.Errorf("%s: %d %q; want %q", body, code, got, want)
		}
	}
	// A column that is a parameter's keeps its name (DuckDB prepares it
	// as "unknown").
	if code, got := post(`{"sql": "SELECT $1 AS x", "params": ["abc"]}`); code != 200 || got != "x\nabc\n" {
		t.Errorf("a parameter's column: %d %q; want x, abc", code, got)
	}
	if code, got := post(`{"sql": "SELECT count(*) AS n FROM power.readings WHERE malo_id = $1", "params": ["' OR '1'='1"]}`); code != 200 || got != "n\n0\n" {
		t.Errorf("a value that looks like SQL: %d %q; want no row to match", code, got)
	}
	for _, body := range []string{
		`{"sql": "SELECT $1 AS x", "params": [[1]]}`,
		`{"sql": "SELECT $1 AS x", "params": "x"}`,
	} {
		if code, got := post(body); code != 400 || !strings.Contains(got, `"bad_request"`) {
			t.Errorf("%s: %d %s; want 400 bad_request", body, code, got)
		}
	}
	if code, got := post(`{"sql": "SELECT $1 AS x"}`); code != 400 || !strings.Contains(got, `"invalid_query"`) {
		t.Errorf("a placeholder without a value: %d %s", code, got)
	}
}

// TestQueryModes: "mode" chooses the tiers read and the answer says so:
// nothing is archived, so a historical read sees no row and reports every
// row unseen, an operational one sees every row; another mode is a bad
// request.
func TestQueryModes(t *testing.T) {
	s := openTwoTables(t)
	reporting, tok := token(t, "reporting", config.ScopeQuery)
	h, err := New(s, Options{Tokens: []config.Token{reporting}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ mode, rows, unseen string }{
		{"historical", "n\n0\n", `"unseen":{"from":"","to":""}`},
		{"operational", "n\n4\n", `"unseen":{"from":"","to":"20`},
		{"", "n\n4\n", ``},
	} {
		body := `{"sql": "SELECT count(*) AS n FROM power.readings", "mode": "` + c.mode + `"}`
		w := queryHTTP(t, h, t.Context(), tok, "text/csv", body)
		mode := c.mode
		if mode == "" {
			mode = "auto"
		}
		tables := w.Header().Get("X-MeterStore-Tables")
		if w.Code != 200 || w.Body.String() != c.rows || w.Header().Get("X-MeterStore-Mode") != mode ||
			strings.Contains(tables, "unseen") != (c.unseen != "") || !strings.Contains(tables, c.unseen) {
			t.Errorf("mode %q: %d %q, mode %q, tables %s", c.mode, w.Code, w.Body, w.Header().Get("X-MeterStore-Mode"), tables)
		}
	}
	if w := queryHTTP(t, h, t.Context(), tok, "text/csv", `{"sql": "SELECT 1", "mode": "cold"}`); w.Code != 400 {
		t.Errorf("mode cold: %d %s", w.Code, w.Body)
	}
}

// TestQueryStatementRefusals: statements that are the caller's mistake
// are 400 invalid_query with a message saying what is refused, logged
// below ERROR: a number beyond DOUBLE beside a system relation (was 500
// at ERROR), a value no parameter takes (was ignored), infinity given to
// a calendar function (was a day of the year 294247), SIMILAR TO with
// ESCAPE (was "not a SELECT").
func TestQueryStatementRefusals(t *testing.T) {
	s := openTwoTables(t)
	reporting, tok := token(t, "reporting", config.ScopeQuery)
	var logs bytes.Buffer
	h, err := New(s, Options{Tokens: []config.Token{reporting}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ body, says string }{
		{queryBody("", `SELECT * FROM system.tables WHERE 1e309 > 0`), "beyond the range of DOUBLE"},
		{`{"sql": "SELECT $1 AS x", "params": ["a", "b"]}`, "a value is given for $2"},
		{`{"sql": "SELECT count(*) FROM power.readings", "params": ["a"]}`, "a value is given for $1"},
		{`{"sql": "SELECT $a AS x", "params": {"a": 1, "b": 2}}`, "a value is given for $b"},
		{queryBody("", `SELECT meter_local_day('infinity')`), "infinity"},
		{queryBody("", `SELECT meter_expected_intervals('infinity'::DATE, 'PT15M', 'STROM')`), "infinity"},
		{queryBody("", `SELECT 'a%' SIMILAR TO 'a!%' ESCAPE '!'`), "Custom escape in SIMILAR TO"},
	} {
		w := queryHTTP(t, h, t.Context(), tok, "text/csv", c.body)
		var e apiError
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || w.Code != 400 || e.Code != "invalid_query" || !strings.Contains(e.Error, c.says) {
			t.Errorf("%s: %d %s; want 400 invalid_query saying %q", c.body, w.Code, w.Body, c.says)
		}
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("a refused statement logged at ERROR:\n%s", logs.String())
	}
}
