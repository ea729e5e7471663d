package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/apierror"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/meterstore/meterstore/internal/resultfmt"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

// queryHTTP posts a query of sql over table with the bearer token tok and
// the Accept accept ("" for none), and returns the recorded answer.
func queryHTTP(t *testing.T, h http.Handler, ctx context.Context, tok, accept, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequestWithContext(ctx, "POST", "/v1/query", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+tok)
	r.Header.Set("Content-Type", "application/json")
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// queryBody is the JSON body of a query of sql over table.
func queryBody(table, sql string) string {
	b, _ := json.Marshal(queryRequest{Table: table, SQL: sql})
	return string(b)
}

// TestQuery: rows written through the store come back over POST /v1/query
// as CSV and as JSON lines, rendered as meterstore query renders them,
// with the watermark and the tiers read; and every refusal is the JSON
// error it documents.
func TestQuery(t *testing.T) {
	s := openStore(t)
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	if err := s.EnsurePartitions(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	var rows []store.Reading
	for i := range 4 {
		from := day.Add(time.Duration(i) * 15 * time.Minute)
		rows = append(rows, store.Reading{
			MaLo: "20000000008", OBIS: "1-1:1.29.0", Commodity: metering.Electricity, From: from, To: from.Add(15 * time.Minute),
			Value: series.Decimal(1_250_000 * (i + 1)), Unit: metering.KilowattHour, Quality: metering.TrueValue,
			Resolution: metering.QuarterHour, Version: 1, VersionScope: "9900000000003:" + day.Format("2006-01"),
		})
	}
	if _, err := s.Write(t.Context(), "power", rows); err != nil {
		t.Fatal(err)
	}
	reporting, reportingTok := token(t, "reporting", config.ScopeQuery)
	powerOnly, powerTok := token(t, "power-reports", config.ScopeQuery)
	powerOnly.Tables = []string{"power"}
	gasOnly, gasTok := token(t, "gas-reports", config.ScopeQuery)
	gasOnly.Tables = []string{"gas"}
	loader, loaderTok := token(t, "loader", config.ScopeIngest)
	h, err := New(s, Options{Tokens: []config.Token{reporting, powerOnly, gasOnly, loader}})
	if err != nil {
		t.Fatal(err)
	}
	// A repeated column name, a decimal, a timestamp and a date.
	const sql = `SELECT malo_id, "from", value, value * 2 AS value, CAST("from" AS DATE) AS d FROM readings ORDER BY "from"`
	at := func(i int) string { return day.Add(time.Duration(i) * 15 * time.Minute).Format(time.RFC3339) }
	date := day.Format(time.DateOnly)

	doc := parseOpenAPI(t)
	w := queryHTTP(t, h, t.Context(), powerTok, "text/csv", queryBody("power", sql))
	doc.conforms(t, "POST", queryPath, w)
	wantCSV := "malo_id,from,value,value,d\n"
	for i := range 4 {
		v := 1.25 * float64(i+1)
		wantCSV += fmt.Sprintf("20000000008,%s,%g,%g,%s\n", at(i), v, 2*v, date)
	}
	if w.Code != 200 || w.Body.String() != wantCSV {
		t.Errorf("CSV: %d\n%s\nwant\n%s", w.Code, w.Body, wantCSV)
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
		t.Errorf("CSV: Content-Type %q", ct)
	}
	// Nothing is archived: the hot tier alone, no watermark; the header
	// is there, empty.
	if wm, ok := w.Header()["X-Meterstore-Watermark"]; !ok || len(wm) != 1 || wm[0] != "" {
		t.Errorf("X-MeterStore-Watermark: %q (present %v); want empty", wm, ok)
	}
	if tiers := w.Header().Get("X-MeterStore-Tiers"); tiers != "hot" {
		t.Errorf("X-MeterStore-Tiers: %q; want hot", tiers)
	}

	// JSON lines, as asked and by default.
	for _, accept := range []string{"application/x-ndjson", "", "*/*", "application/vnd.apache.arrow.stream;q=0.4, application/x-ndjson;q=0.5"} {
		w := queryHTTP(t, h, t.Context(), reportingTok, accept, queryBody("power", sql))
		if w.Code != 200 || w.Header().Get("Content-Type") != "application/x-ndjson" {
			t.Errorf("Accept %q: %d %q %s", accept, w.Code, w.Header().Get("Content-Type"), w.Body)
			continue
		}
		lines := strings.Split(strings.TrimSuffix(w.Body.String(), "\n"), "\n")
		if len(lines) != 4 {
			t.Errorf("Accept %q: %d lines; want 4:\n%s", accept, len(lines), w.Body)
			continue
		}
		for i, line := range lines {
			v := 1.25 * float64(i+1)
			want := fmt.Sprintf(`{"malo_id":"20000000008","from":%q,"value":"%g","value_2":"%g","d":%q}`, at(i), v, 2*v, date)
			if line != want {
				t.Errorf("Accept %q, line %d:\ngot  %s\nwant %s", accept, i+1, line, want)
			}
		}
	}

	// Refusals, each a JSON error.
	for _, tc := range []struct {
		name, tok, accept, body string
		status                  int
		code                    string
	}{
		{"DELETE", reportingTok, "", queryBody("power", "DELETE FROM readings"), 400, "not_read_only"},
		{"unknown column", reportingTok, "text/csv", queryBody("power", "SELECT nonexistent FROM readings"), 400, "invalid_query"},
		{"syntax error", reportingTok, mediaArrow, queryBody("power", "SELECT count(*) FROM readings WHERE ("), 400, "invalid_query"},
		{"scope ingest", loaderTok, "", queryBody("power", sql), 403, "forbidden"},
		{"token of another table", gasTok, "", queryBody("power", sql), 403, "forbidden"},
		{"token of another table, unknown table", powerTok, "", queryBody("water", sql), 403, "forbidden"},
		{"unknown table", reportingTok, "", queryBody("water", sql), 404, "not_found"},
		{"JSON", reportingTok, "application/json", queryBody("power", sql), 406, "not_acceptable"},
		{"not JSON", reportingTok, "", "table=power", 400, "bad_request"},
		{"no sql", reportingTok, "", `{"table":"power"}`, 400, "bad_request"},
		{"unknown field", reportingTok, "", `{"table":"power","sql":"SELECT 1","format":"csv"}`, 400, "bad_request"},
		{"two objects", reportingTok, "", queryBody("power", sql) + queryBody("power", sql), 400, "bad_request"},
	} {
		w := queryHTTP(t, h, t.Context(), tc.tok, tc.accept, tc.body)
		doc.conforms(t, "POST", queryPath, w)
		var out map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q %q is not a JSON error", tc.name, w.Code, w.Header().Get("Content-Type"), w.Body)
			continue
		}
		if w.Code != tc.status || out["code"] != tc.code || out["error"] == "" {
			t.Errorf("%s: %d %v; want %d %s", tc.name, w.Code, out, tc.status, tc.code)
		}
		if tc.code == "invalid_query" && !strings.Contains(fmt.Sprint(out["error"]), map[string]string{
			"unknown column": "nonexistent", "syntax error": "syntax error"}[tc.name]) {
			t.Errorf("%s: %q does not name the problem", tc.name, out["error"])
		}
	}
	if code, out, hdr := call(t, h, "GET", "/v1/query", reportingTok); code != 405 || hdr.Get("Allow") != "POST" {
		t.Errorf("GET /v1/query: %d %v", code, out)
	}

	// A client gone before the answer cancels the query.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if w := queryHTTP(t, h, ctx, reportingTok, "", queryBody("power", sql)); w.Code != statusClientClosed {
		t.Errorf("a canceled request: %d %s", w.Code, w.Body)
	}
}

// TestQueryStatus: every kind of failed query has an HTTP status, 5xx
// only for the server's own failures and for a retryable state.
func TestQueryStatus(t *testing.T) {
	for k := apierror.Internal; k <= apierror.Canceled; k++ {
		status, ok := queryStatus[k]
		switch {
		case !ok:
			t.Errorf("kind %d has no status", k)
		case (k == apierror.Internal || k == apierror.Altered) && status != 500, k == apierror.Unavailable && status != 503:
			t.Errorf("kind %d: status %d", k, status)
		case k != apierror.Internal && k != apierror.Altered && k != apierror.Unavailable && k != apierror.Timeout && (status < 400 || status >= 500):
			t.Errorf("kind %d, the client's doing: status %d", k, status)
		}
	}
}

// typedSQL selects a column of every DuckDB type the Arrow answer maps,
// NULLs among them, and types it renders as text.
const typedSQL = `SELECT * FROM (VALUES
	(true, 1::TINYINT, 2::SMALLINT, 3::INTEGER, 4::BIGINT, 5::UTINYINT, 6::USMALLINT, 7::UINTEGER, 8::UBIGINT,
	 170141183460469231731687303715884105727::HUGEINT, 1.5::FLOAT, 2.25::DOUBLE, 123.456789::DECIMAL(18,6),
	 'grün'::VARCHAR, '\xAA\x00'::BLOB, DATE '2026-03-29', TIME '01:02:03.456789', TIMESTAMP '2026-03-29 01:00:00.123456',
	 TIMESTAMPTZ '2026-03-29 01:00:00+00', INTERVAL '1 month 2 days 3 seconds', '6d3a4b2e-7f0e-4a8b-9c1d-2e3f4a5b6c7d'::UUID,
	 [1, 2], {'a': 1}, DATE 'infinity'),
	(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
	(false, -1::TINYINT, -2::SMALLINT, -3::INTEGER, -4::BIGINT, 255::UTINYINT, 65535::USMALLINT, 4294967295::UINTEGER, 18446744073709551615::UBIGINT,
	 -170141183460469231731687303715884105727::HUGEINT, -0.5::FLOAT, -1e300::DOUBLE, -0.000001::DECIMAL(18,6),
	 '', ''::BLOB, DATE '1901-12-13', TIME '23:59:59', TIMESTAMP '1969-12-31 23:59:59.999999',
	 TIMESTAMPTZ '1900-01-01 00:00:00+00', INTERVAL '-1 day', '00000000-0000-0000-0000-000000000000'::UUID,
	 [], {'a': NULL}, DATE '1970-01-01')
) AS t(b, i8, i16, i32, i64, u8, u16, u32, u64, huge, f32, f64, dec, s, blob, d, tm, ts, tstz, iv, uuid, list, struct, dinf)`

// arrowTypes are the Arrow types of typedSQL's columns.
var arrowTypes = []string{
	"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
	"utf8", "float32", "float64", "decimal(18, 6)", "utf8", "binary", "date32", "time64[us]",
	"timestamp[us]", "timestamp[us, tz=UTC]", "month_day_nano_interval", "utf8", "utf8", "utf8", "date32",
}

// goValue returns the value at i of arr as duckdb-go would have returned
// it for a column of DuckDB type typ, so that resultfmt renders it.
func goValue(t *testing.T, arr arrow.Array, i int, typ string) any {
	t.Helper()
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int8:
		return a.Value(i)
	case *array.Int16:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return a.Value(i)
	case *array.Uint16:
		return a.Value(i)
	case *array.Uint32:
		return a.Value(i)
	case *array.Uint64:
		return a.Value(i)
	case *array.Float32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.Binary:
		return slices.Clone(a.Value(i))
	case *array.Decimal128:
		dt := a.DataType().(*arrow.Decimal128Type)
		return duckdb.Decimal{Width: uint8(dt.Precision), Scale: uint8(dt.Scale), Value: a.Value(i).BigInt()}
	case *array.Date32:
		return a.Value(i).ToTime()
	case *array.Time64:
		return time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(a.Value(i)) * time.Microsecond)
	case *array.Timestamp:
		return time.UnixMicro(int64(a.Value(i))).UTC()
	case *array.MonthDayNanoInterval:
		v := a.Value(i)
		return duckdb.Interval{Months: v.Months, Days: v.Days, Micros: v.Nanoseconds / 1000}
	}
	t.Fatalf("an Arrow %s in a column of type %s", arr.DataType(), typ)
	return nil
}

// readArrow decodes an Arrow IPC stream: its schema and its rows rendered
// as the CSV answer renders them, the DuckDB types given.
func readArrow(t *testing.T, body io.Reader, types []string) (*arrow.Schema, [][]string, error) {
	t.Helper()
	rd, err := ipc.NewReader(body)
	if err != nil {
		return nil, nil, err
	}
	defer rd.Release()
	var rows [][]string
	for rd.Next() {
		rec := rd.RecordBatch()
		for r := range int(rec.NumRows()) {
			row := make([]string, rec.NumCols())
			for c := range row {
				row[c] = resultfmt.Text(goValue(t, rec.Column(c), r, types[c]), types[c])
			}
			rows = append(rows, row)
		}
	}
	return rd.Schema(), rows, rd.Err()
}

// TestQueryArrow: the Arrow answer has the types queryarrow.go documents
// and, rendered, the values of the CSV answer; the watermark and tiers
// are in its schema's metadata.
func TestQueryArrow(t *testing.T) {
	s := openStore(t)
	reporting, tok := token(t, "reporting", config.ScopeQuery)
	h, err := New(s, Options{Tokens: []config.Token{reporting}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Query(t.Context(), "power", typedSQL)
	if err != nil {
		t.Fatal(err)
	}
	w := queryHTTP(t, h, t.Context(), tok, "text/csv", queryBody("power", typedSQL))
	if w.Code != 200 {
		t.Fatalf("CSV: %d %s", w.Code, w.Body)
	}
	want, err := csv.NewReader(w.Body).ReadAll()
	if err != nil || len(want) != 4 {
		t.Fatalf("CSV: %v %q", err, want)
	}

	w = queryHTTP(t, h, t.Context(), tok, mediaArrow, queryBody("power", typedSQL))
	if w.Code != 200 || w.Header().Get("Content-Type") != mediaArrow {
		t.Fatalf("Arrow: %d %q %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	parseOpenAPI(t).conforms(t, "POST", queryPath, w)
	schema, rows, err := readArrow(t, w.Body, res.Types)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range schema.Fields() {
		if f.Name != want[0][i] || i >= len(arrowTypes) || f.Type.String() != arrowTypes[i] {
			t.Errorf("column %d: %s %s; want %s %s", i, f.Name, f.Type, want[0][i], arrowTypes[i])
		}
	}
	if len(schema.Fields()) != len(arrowTypes) {
		t.Errorf("%d columns; want %d", len(schema.Fields()), len(arrowTypes))
	}
	if !slices.EqualFunc(rows, want[1:], slices.Equal) {
		t.Errorf("Arrow rows\n%q\nwant the CSV's\n%q", rows, want[1:])
	}
	md := schema.Metadata()
	if wm, ok := md.GetValue("meterstore.watermark"); !ok || wm != w.Header().Get("X-MeterStore-Watermark") {
		t.Errorf("schema metadata %v; headers %v", md, w.Header())
	}
	if tiers, ok := md.GetValue("meterstore.tiers"); !ok || tiers != w.Header().Get("X-MeterStore-Tiers") {
		t.Errorf("schema metadata %v; headers %v", md, w.Header())
	}
}

// maxRows is the query.max_rows of TestQueryPastMaxRows.
func maxRows(n int) store.ConfigOption {
	return func(o *store.Options) { o.Query.MaxRows = n }
}

// TestQueryPastMaxRows: an answer larger than query.max_rows, which
// Store.Query refuses, streams whole in every format, with the readings
// of both tiers: archived and hot.
func TestQueryPastMaxRows(t *testing.T) {
	s := openStore(t, maxRows(100))
	day := time.Now().UTC().Truncate(24 * time.Hour)
	if err := s.EnsurePartitions(t.Context(), day); err != nil {
		t.Fatal(err)
	}
	var rows []store.Reading
	for i := range 96 {
		from := day.Add(time.Duration(i) * 15 * time.Minute)
		for m := range 3 {
			malo, err := metering.MaLoFromPrefix(fmt.Sprintf("200000000%d", m))
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, store.Reading{
				MaLo: malo.String(), OBIS: "1-1:1.29.0", Commodity: metering.Electricity, From: from, To: from.Add(15 * time.Minute),
				Value: series.Decimal(1_000_000 * (i + 1)), Unit: metering.KilowattHour, Quality: metering.TrueValue,
				Resolution: metering.QuarterHour, Version: 1, VersionScope: "9900000000003:" + day.Format("2006-01"),
			})
		}
	}
	if _, err := s.Write(t.Context(), "power", rows); err != nil {
		t.Fatal(err)
	}
	reporting, tok := token(t, "reporting", config.ScopeQuery)
	h, err := New(s, Options{Tokens: []config.Token{reporting}})
	if err != nil {
		t.Fatal(err)
	}
	// 288 readings and 20,000 numbers, past two Arrow batches.
	const sql = `SELECT 'r' AS kind, value::DOUBLE AS v FROM readings UNION ALL SELECT 'n', range::DOUBLE FROM range(20000)`
	if _, err := s.Query(t.Context(), "power", sql); !errors.Is(err, store.ErrTooManyRows) {
		t.Fatalf("Store.Query past max_rows: %v", err)
	}
	wantN, wantSum := 288+20000, 3*96*97/2.0+20000*19999/2.0
	check := func(format string, kinds []string, vs []float64) {
		t.Helper()
		sum, readings := 0.0, 0
		for i, v := range vs {
			sum += v
			if kinds[i] == "r" {
				readings++
			}
		}
		if len(vs) != wantN || sum != wantSum || readings != 288 {
			t.Errorf("%s: %d rows, %d readings, sum %v; want %d, 288, %v", format, len(vs), readings, sum, wantN, wantSum)
		}
	}

	w := queryHTTP(t, h, t.Context(), tok, "text/csv", queryBody("power", sql))
	recs, err := csv.NewReader(w.Body).ReadAll()
	if w.Code != 200 || err != nil || len(recs) == 0 {
		t.Fatalf("CSV: %d %v", w.Code, err)
	}
	var kinds []string
	var vs []float64
	for _, r := range recs[1:] {
		v, _ := strconv.ParseFloat(r[1], 64)
		kinds, vs = append(kinds, r[0]), append(vs, v)
	}
	check("CSV", kinds, vs)
	if tr := w.Result().Trailer.Get("X-MeterStore-Error"); tr != "" {
		t.Errorf("CSV: a whole answer with the trailer %s", tr)
	}

	w = queryHTTP(t, h, t.Context(), tok, "application/x-ndjson", queryBody("power", sql))
	kinds, vs = nil, nil
	dec := json.NewDecoder(w.Body)
	for {
		var line struct {
			Kind string  `json:"kind"`
			V    float64 `json:"v,string"` // a float is rendered as text
		}
		if err := dec.Decode(&line); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("JSON lines: %v", err)
		}
		kinds, vs = append(kinds, line.Kind), append(vs, line.V)
	}
	check("JSON lines", kinds, vs)

	w = queryHTTP(t, h, t.Context(), tok, mediaArrow, queryBody("power", sql))
	rd, err := ipc.NewReader(w.Body)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	kinds, vs = nil, nil
	batches := 0
	for rd.Next() {
		rec := rd.RecordBatch()
		batches++
		k, v := rec.Column(0).(*array.String), rec.Column(1).(*array.Float64)
		for i := range int(rec.NumRows()) {
			kinds, vs = append(kinds, k.Value(i)), append(vs, v.Value(i))
		}
	}
	if rd.Err() != nil || batches < 3 {
		t.Errorf("Arrow: %d batches, %v", batches, rd.Err())
	}
	check("Arrow", kinds, vs)
}

// slowWriter is a ResponseRecorder whose first flush takes longer than
// the query timeout, as a client that reads slowly would.
type slowWriter struct {
	*httptest.ResponseRecorder
	delay time.Duration
	slept bool
}

func (w *slowWriter) Flush() {
	if !w.slept && w.Body.Len() > 0 {
		w.slept = true
		time.Sleep(w.delay)
	}
	w.ResponseRecorder.Flush()
}

// TestQueryCutShort: an error after the first row has been sent cuts the
// answer short visibly: CSV with the trailer X-MeterStore-Error, JSON
// lines with it and a last error line, Arrow without its end-of-stream
// marker, the connection dropped.
func TestQueryCutShort(t *testing.T) {
	// The first batch must be sent before the timeout: 300 ms was too
	// short for preparing the statement on two cores under a loaded build.
	const timeout = 2 * time.Second
	s := openStore(t, func(o *store.Options) { o.Query.Timeout = timeout })
	reporting, tok := token(t, "reporting", config.ScopeQuery)
	h, err := New(s, Options{Tokens: []config.Token{reporting}})
	if err != nil {
		t.Fatal(err)
	}
	const sql = `SELECT range AS n FROM range(100000)`
	serve := func(accept string) (w *slowWriter, aborted any) {
		r := httptest.NewRequestWithContext(t.Context(), "POST", "/v1/query", strings.NewReader(queryBody("power", sql)))
		r.Header.Set("Authorization", "Bearer "+tok)
		r.Header.Set("Accept", accept)
		w = &slowWriter{ResponseRecorder: httptest.NewRecorder(), delay: 2 * timeout}
		defer func() { aborted = recover() }()
		h.ServeHTTP(w, r)
		return w, nil
	}

	for _, accept := range []string{"text/csv", "application/x-ndjson"} {
		w, aborted := serve(accept)
		if aborted != nil {
			t.Fatalf("%s: %v", accept, aborted)
		}
		lines := strings.Split(strings.TrimSuffix(w.Body.String(), "\n"), "\n")
		trailer := w.Result().Trailer.Get("X-MeterStore-Error")
		var te apiError
		if err := json.Unmarshal([]byte(trailer), &te); err != nil || te.Code != "timeout" || w.Code != 200 {
			t.Errorf("%s: %d, trailer %q (%v); want a timeout", accept, w.Code, trailer, err)
		}
		if len(lines) < 2 || len(lines) > 100000 {
			t.Errorf("%s: %d lines", accept, len(lines))
		}
		if accept == "application/x-ndjson" {
			var last apiError
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last != te {
				t.Errorf("JSON lines: the last line %q; want the error %+v", lines[len(lines)-1], te)
			}
		}
	}

	w, aborted := serve(mediaArrow)
	if aborted != http.ErrAbortHandler {
		t.Fatalf("Arrow: the handler did not drop the connection: %v", aborted)
	}
	if w.Body.Len() == 0 {
		t.Fatal("Arrow: nothing sent before the timeout")
	}
	rd, err := ipc.NewReader(bytes.NewReader(w.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rd.Next() {
		n += int(rd.RecordBatch().NumRows())
	}
	// What was sent is whole batches; the stream has no end-of-stream
	// marker, which the dropped connection makes a reader notice.
	if eos := []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}; bytes.HasSuffix(w.Body.Bytes(), eos) || n == 0 || n >= 100000 {
		t.Errorf("Arrow: %d rows, %d bytes ending % x", n, w.Body.Len(), w.Body.Bytes()[max(0, w.Body.Len()-8):])
	}
	rd.Release()
}

// TestQueryClientGone: a client that goes away mid-answer cancels the
// query; the handler logs it cut short, status 499.
func TestQueryClientGone(t *testing.T) {
	s := openStore(t)
	reporting, tok := token(t, "reporting", config.ScopeQuery)
	var logs syncBuffer
	h, err := New(s, Options{Tokens: []config.Token{reporting}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	// About 60 MB of JSON lines: more than the socket buffers hold.
	body := queryBody("power", `SELECT range AS n, repeat('x', 200) AS s FROM range(300000)`)
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/query", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if resp.StatusCode != 200 || err != nil || !strings.HasPrefix(line, `{"n":0,`) {
		t.Fatalf("%d %q %v", resp.StatusCode, line, err)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(time.Minute) // a safety bound, not a measure
	for !strings.Contains(logs.String(), "query answer cut short") {
		if time.Now().After(deadline) {
			t.Fatalf("no cut-short answer logged:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if l := logs.String(); !strings.Contains(l, "status=499") || strings.Contains(l, "rows=300000") {
		t.Errorf("logs:\n%s", l)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestJSONAnswerBoundedInBytes: a JSON-lines answer holds less than
// queryFlushBytes of lines before it sends them, and sends a larger line
// alone, in one write, never held: it held up to 1,000 rows, whatever
// their size.
func TestJSONAnswerBoundedInBytes(t *testing.T) {
	var sent bytes.Buffer
	var writes []int
	cw := writerFunc(func(p []byte) (int, error) {
		writes = append(writes, len(p))
		return sent.Write(p)
	})
	a := &jsonAnswer{w: httptest.NewRecorder(), cw: cw, j: resultfmt.NewJSONLines([]string{"i", "s"}, []string{"BIGINT", "VARCHAR"}),
		flush: func() error { return nil }}
	var want bytes.Buffer
	for i := range int64(300) {
		s := strings.Repeat("x", 10_000)
		if i%100 == 50 {
			s = strings.Repeat("y", 1<<20)
		}
		if err := a.row([]any{i, s}); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&want, "{\"i\":%d,\"s\":%q}\n", i, s)
		if a.b.Len() >= queryFlushBytes {
			t.Fatalf("after row %d the answer holds %d bytes, at least %d", i, a.b.Len(), queryFlushBytes)
		}
	}
	if err := a.end(); err != nil {
		t.Fatal(err)
	}
	if sent.String() != want.String() {
		t.Fatalf("the answer differs from the rows: %d bytes, want %d", sent.Len(), want.Len())
	}
	for _, n := range writes {
		if n >= queryFlushBytes && n > 1<<20+32 {
			t.Errorf("a write of %d bytes: more than one large line", n)
		}
	}
}

// writerFunc is an io.Writer of a function.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
