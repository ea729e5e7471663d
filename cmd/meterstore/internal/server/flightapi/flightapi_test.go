package flightapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/httpapi"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/metrics"
	"github.com/meterstore/meterstore/internal/metrics/metricstest"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// day0 is the first day written; days 0 and 1 are archived at day 4.
var day0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// openStore opens a deployment of two daily tables, power and heat, with
// a settlement lag of two days, and writes 4 days of two meters to power
// and one day to heat; days 0 and 1 of power are archived.
func openStore(t *testing.T, opts ...store.ConfigOption) *store.Store {
	t.Helper()
	dir := t.TempDir()
	src := fmt.Sprintf(`
[postgres]
url = %q
data_dir = %q
[warehouse]
url = %q
[archive]
settlement_lag = "2d"
archival_step = "1d"
[[table]]
name = "power"
resolutions = ["PT15M"]
[[table]]
name = "heat"
resolutions = ["PT15M"]
`, pgtest.NewDB(t), dir, "file://"+filepath.Join(dir, "wh"))
	cfg, err := config.Parse([]byte(src), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.OpenConfig(t.Context(), cfg, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx := t.Context()
	if err := s.CreatePartitions(ctx, day0, day0.AddDate(0, 0, 6)); err != nil {
		t.Fatal(err)
	}
	write := func(table string, days int) {
		var rows []store.Reading
		for d := range days {
			for m, malo := range []string{"20000000008", "20000000016"} {
				for q := range 96 {
					from := day0.AddDate(0, 0, d).Add(time.Duration(q) * 15 * time.Minute)
					rows = append(rows, store.Reading{
						MaLo: malo, OBIS: "1-1:1.29.0", Commodity: metering.Electricity, From: from, To: from.Add(15 * time.Minute),
						Value: series.Decimal(int64(1_000_000*(q%7) + 250_000*m + d)), Unit: metering.KilowattHour,
						Quality: metering.TrueValue, Resolution: metering.QuarterHour, Version: 1, VersionScope: "9900000000003:2026-03",
					})
				}
			}
		}
		if _, err := s.Write(ctx, table, rows); err != nil {
			t.Fatal(err)
		}
	}
	write("power", 4)
	write("heat", 1)
	if out, err := s.Archive(ctx, "power", day0.AddDate(0, 0, 4)); err != nil || !out.Watermark.Equal(day0.AddDate(0, 0, 2)) {
		t.Fatalf("archive: %+v, %v", out, err)
	}
	return s
}

// token returns a configured token of name with scopes and tables, and
// its text.
func token(t *testing.T, name string, scopes []string, tables ...string) (config.Token, string) {
	t.Helper()
	text, _, err := config.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	return config.Token{Name: name, Hash: sha256.Sum256([]byte(text)), Scopes: scopes, Tables: tables}, text
}

// lockedBuffer collects the server's log.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serve serves the Flight SQL service over s on 127.0.0.1 and returns a
// client of it.
func serve(t *testing.T, s *store.Store, o Options) *flightsql.Client {
	t.Helper()
	g, err := New(s, o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(ln)
	t.Cleanup(g.Stop)
	cl, err := flightsql.NewClient(ln.Addr().String(), nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// with returns ctx carrying the bearer token tok.
func with(ctx context.Context, tok string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
}

// fetch reads the whole stream of info's one endpoint: its schema and
// its rows, each value as arrow's ValueStr renders it.
func fetch(ctx context.Context, cl *flightsql.Client, info *flight.FlightInfo) (*arrow.Schema, [][]string, error) {
	if len(info.Endpoint) != 1 {
		return nil, nil, fmt.Errorf("%d endpoints", len(info.Endpoint))
	}
	rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return nil, nil, err
	}
	defer rdr.Release()
	var rows [][]string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := range int(rec.NumRows()) {
			row := make([]string, rec.NumCols())
			for j, col := range rec.Columns() {
				row[j] = col.ValueStr(i)
			}
			rows = append(rows, row)
		}
	}
	return rdr.Schema(), rows, rdr.Err()
}

// query runs sql through Execute and DoGet.
func query(ctx context.Context, cl *flightsql.Client, sql string) (*arrow.Schema, [][]string, error) {
	info, err := cl.Execute(ctx, sql)
	if err != nil {
		return nil, nil, err
	}
	return fetch(ctx, cl, info)
}

// stored returns the answer of store.Query to sql over table, each value
// as a string: a cross-check that the test's SQL makes of plain types.
func stored(t *testing.T, s *store.Store, table, sql string) [][]string {
	t.Helper()
	res, err := s.Query(t.Context(), table, sql)
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for _, r := range res.Rows {
		row := make([]string, len(r))
		for i, v := range r {
			row[i] = fmt.Sprint(v)
		}
		rows = append(rows, row)
	}
	return rows
}

// perDay is the test's cross-tier statement: counts and sums per day and
// meter, of plain types.
const perDay = `SELECT strftime("from", '%%Y-%%m-%%d') AS day, malo_id, count(*) AS n, sum(value)::VARCHAR AS total
FROM %sreadings GROUP BY ALL ORDER BY day, malo_id`

// TestFlightSQL: statements and prepared statements over both tiers equal
// store.Query's answer, GetTables lists what a token may see, writes are
// refused, and every auth failure has its code and is counted.
func TestFlightSQL(t *testing.T) {
	s := openStore(t, store.WithWallClock(func() time.Time { return day0.AddDate(0, 0, 4) }))
	reporting, reportingTok := token(t, "reporting", []string{config.ScopeQuery})
	heatOnly, heatTok := token(t, "heat-reports", []string{config.ScopeQuery}, "heat")
	loader, loaderTok := token(t, "loader", []string{config.ScopeIngest})
	var logs lockedBuffer
	reader := sdkmetric.NewManualReader()
	cl := serve(t, s, Options{Tokens: []config.Token{reporting, heatOnly, loader},
		Meters: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := with(t.Context(), reportingTok)

	want := stored(t, s, "power", fmt.Sprintf(perDay, ""))
	if len(want) != 8 {
		t.Fatalf("store.Query answered %d rows; want 4 days of 2 meters", len(want))
	}
	for _, prefix := range []string{"power.", "meterstore.power.", `"meterstore"."power".`} {
		sc, got, err := query(ctx, cl, fmt.Sprintf(perDay, prefix))
		if err != nil {
			t.Fatalf("%sreadings: %v", prefix, err)
		}
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("%sreadings:\n%v\nwant\n%v", prefix, got, want)
		}
		md := sc.Metadata()
		if tiers, _ := md.GetValue("meterstore.tiers"); tiers != "cold,hot" {
			t.Errorf("%sreadings: tiers %q; want cold,hot", prefix, tiers)
		}
		if wm, _ := md.GetValue("meterstore.watermark"); wm != "2026-03-04T00:00:00Z" {
			t.Errorf("%sreadings: watermark %q", prefix, wm)
		}
	}

	// A prepared statement, run twice, then closed.
	prep, err := cl.Prepare(ctx, fmt.Sprintf(perDay, "power."))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		info, err := prep.Execute(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, got, err := fetch(ctx, cl, info); err != nil || !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("prepared statement: %v, %v", got, err)
		}
	}
	if _, err := prep.Execute(with(t.Context(), heatTok)); status.Code(err) != codes.NotFound {
		t.Errorf("another token's prepared statement: %v; want NotFound", err)
	}
	if err := prep.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The client refuses a closed statement itself: ask by its handle.
	closed := flightsql.NewPreparedStatement(cl, prep.Handle())
	if _, err := closed.Execute(ctx); status.Code(err) != codes.NotFound {
		t.Errorf("a closed prepared statement: %v; want NotFound", err)
	}

	// The system tables, computed by the server, without a table.
	if _, got, err := query(ctx, cl, `SELECT "table", healthy FROM system.tables ORDER BY 1`); err != nil ||
		fmt.Sprint(got) != "[[heat true] [power true]]" {
		t.Errorf("system.tables: %v, %v", got, err)
	}

	// Naming errors, store errors and writes.
	for sql, code := range map[string]codes.Code{
		"SELECT count(*) FROM readings": codes.InvalidArgument, // which table?
		"SELECT count(*) FROM power.readings p, heat.readings h WHERE p.malo_id = h.malo_id": codes.OK, // two tables
		"SELECT count(*) FROM power.readings, nosuch.readings":                               codes.InvalidArgument,
		"SELECT * FROM meterstore.nosuch.readings":                                           codes.InvalidArgument,
		"SELECT nosuch FROM power.readings":                                                  codes.InvalidArgument, // DuckDB cannot bind it
		"DELETE FROM power.readings":                                                         codes.InvalidArgument, // not read-only
		"SELECT 1 FROM power.readings WHERE malo_id = 'x.heat.'":                             codes.OK,
	} {
		_, _, err := query(ctx, cl, sql)
		if status.Code(err) != code {
			t.Errorf("%s: %v; want %v", sql, err, code)
		}
	}
	// A write, as a query or as an update, is told that only SELECT
	// runs, never DuckDB's words about serializing to JSON.
	for _, sql := range []string{"DELETE FROM power.readings", "INSERT INTO power.readings SELECT * FROM power.readings",
		"CREATE TABLE x (i INTEGER)"} {
		_, _, err := query(ctx, cl, sql)
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "only a single SELECT statement may run: this statement is not a SELECT") ||
			!strings.Contains(err.Error(), "read-only") || strings.Contains(err.Error(), "json") {
			t.Errorf("query %s: %v; want InvalidArgument, not a SELECT, read-only", sql, err)
		}
		if _, err := cl.ExecuteUpdate(ctx, sql); status.Code(err) != codes.InvalidArgument ||
			!strings.Contains(err.Error(), "read-only: only SELECT statements are accepted") {
			t.Errorf("ExecuteUpdate %s: %v; want InvalidArgument, read-only", sql, err)
		}
	}

	// GetTables: the relations of each table the token may touch, and the
	// system tables, with their schemas.
	tables := func(ctx context.Context, opts *flightsql.GetTablesOpts) ([][]string, *arrow.Schema) {
		t.Helper()
		info, err := cl.GetTables(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			t.Fatal(err)
		}
		defer rdr.Release()
		var rows [][]string
		var readings *arrow.Schema
		for rdr.Next() {
			rec := rdr.RecordBatch()
			for i := range int(rec.NumRows()) {
				var row []string
				for j := range 4 {
					row = append(row, rec.Column(j).ValueStr(i))
				}
				rows = append(rows, row)
				if opts.IncludeSchema && row[1] == "power" && row[2] == "readings" {
					b := rec.Column(4).(*array.Binary).Value(i)
					if readings, err = flight.DeserializeSchema(b, nil); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		if err := rdr.Err(); err != nil {
			t.Fatal(err)
		}
		return rows, readings
	}
	got, readings := tables(ctx, &flightsql.GetTablesOpts{IncludeSchema: true})
	var names []string
	for _, r := range got {
		names = append(names, strings.Join(r, "."))
	}
	for _, n := range []string{"meterstore.power.readings.TABLE", "meterstore.power.readings_versions.TABLE",
		"meterstore.power.completeness.TABLE", "meterstore.heat.readings.TABLE", "meterstore.system.tables.SYSTEM TABLE", "meterstore.system.snapshots.SYSTEM TABLE"} {
		if !slices.Contains(names, n) {
			t.Errorf("GetTables has no %s: %v", n, names)
		}
	}
	if readings == nil || !slices.ContainsFunc(readings.Fields(), func(f arrow.Field) bool {
		return f.Name == "value" && f.Type.ID() == arrow.DECIMAL128
	}) {
		t.Errorf("the schema of power.readings: %v", readings)
	}
	heatCtx := with(t.Context(), heatTok)
	schemaPat, types := "%", []string{"TABLE"}
	got, _ = tables(heatCtx, &flightsql.GetTablesOpts{DbSchemaFilterPattern: &schemaPat, TableTypes: types})
	if fmt.Sprint(got) != "[[meterstore heat readings TABLE] [meterstore heat readings_versions TABLE] [meterstore heat completeness TABLE]]" {
		t.Errorf("GetTables for a token of heat, type TABLE: %v", got)
	}

	// Auth: no token, a wrong one, one without the scope, one without the
	// table.
	if _, err := cl.Execute(t.Context(), "SELECT 1"); status.Code(err) != codes.Unauthenticated {
		t.Errorf("no token: %v; want Unauthenticated", err)
	}
	if _, err := cl.GetTables(with(t.Context(), "wrong"), &flightsql.GetTablesOpts{}); status.Code(err) != codes.Unauthenticated {
		t.Errorf("a wrong token: %v; want Unauthenticated", err)
	}
	if _, err := cl.Execute(with(t.Context(), loaderTok), "SELECT 1"); status.Code(err) != codes.PermissionDenied {
		t.Errorf("an ingest token: %v; want PermissionDenied", err)
	}
	if _, err := cl.Execute(heatCtx, fmt.Sprintf(perDay, "power.")); status.Code(err) != codes.PermissionDenied {
		t.Errorf("a token of heat on power: %v; want PermissionDenied", err)
	}
	// A statement of heat that reads power too: refused before a row.
	if _, _, err := query(heatCtx, cl, `SELECT count(*) FROM heat.readings h JOIN power.readings p USING (malo_id, "from")`); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "power") {
		t.Errorf("a token of heat reading power through heat: %v; want PermissionDenied", err)
	}
	// query('...') of heat, a table the token may read and not the first
	// declared, answers as the statement inside it does; of power it is
	// refused before a row.
	_, direct, err := query(heatCtx, cl, `SELECT count(*), sum(value) FROM heat.readings`)
	if err != nil {
		t.Fatal(err)
	}
	if _, got, err := query(heatCtx, cl, `SELECT * FROM query('SELECT count(*), sum(value) FROM heat.readings')`); err != nil || fmt.Sprint(got) != fmt.Sprint(direct) {
		t.Errorf("query() of heat for a token of heat: %v, %v; want %v", got, err, direct)
	}
	if _, _, err := query(heatCtx, cl, `SELECT * FROM query('SELECT count(*) FROM power.readings')`); status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "power") {
		t.Errorf("query() of power for a token of heat: %v; want PermissionDenied", err)
	}
	// A ticket is the client's: DoGet checks it again.
	info, err := cl.Execute(ctx, fmt.Sprintf(perDay, "power."))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := fetch(heatCtx, cl, info); status.Code(err) != codes.PermissionDenied {
		t.Errorf("a ticket of power fetched by a token of heat: %v; want PermissionDenied", err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "meterstore.http.auth_failures" {
				for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
					reason, _ := p.Attributes.Value("reason")
					counts[reason.AsString()] += p.Value
				}
			}
		}
	}
	if want := map[string]int64{"missing": 1, "invalid": 1, "forbidden": 5}; fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("auth failures by reason = %v; want %v", counts, want)
	}
	if log := logs.String(); strings.Contains(log, reportingTok) || strings.Contains(log, heatTok) || !strings.Contains(log, "flight sql call refused") {
		t.Errorf("the log holds a token or no refusal:\n%s", log)
	}
}

// TestFlightSQLCancel: a client that cancels its stream after the first
// batch ends the query on the server: it is logged canceled, short of its
// rows, and its slot is free for the next query.
func TestFlightSQLCancel(t *testing.T) {
	s := openStore(t)
	reporting, tok := token(t, "reporting", []string{config.ScopeQuery})
	var logs lockedBuffer
	cl := serve(t, s, Options{Tokens: []config.Token{reporting}, MaxConcurrentQueries: 1,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	const total = 3_000_000
	ctx, cancel := context.WithCancel(with(t.Context(), tok))
	info, err := cl.Execute(ctx, fmt.Sprintf("SELECT i FROM range(%d) t(i)", total))
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		t.Fatal(err)
	}
	if !rdr.Next() {
		t.Fatalf("no first batch: %v", rdr.Err())
	}
	cancel()
	for rdr.Next() {
	}
	if err := rdr.Err(); !errors.Is(err, context.Canceled) && status.Code(err) != codes.Canceled {
		t.Errorf("the stream after cancel: %v", err)
	}
	rdr.Release()

	// The slot frees once the server's query has ended; bounded wait.
	ok := with(t.Context(), tok)
	deadline := time.Now().Add(time.Minute)
	for {
		_, rows, err := query(ok, cl, "SELECT 42 AS n")
		if err == nil {
			if fmt.Sprint(rows) != "[[42]]" {
				t.Errorf("after cancel: %v", rows)
			}
			break
		}
		if status.Code(err) != codes.ResourceExhausted || time.Now().After(deadline) {
			t.Fatalf("after cancel: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	log := logs.String()
	if !strings.Contains(log, "flight sql query failed") || !strings.Contains(log, "code=canceled") ||
		strings.Contains(log, fmt.Sprintf("rows=%d", total)) {
		t.Errorf("the canceled query is not logged canceled, short of its rows:\n%s", log)
	}
}

// TestFlightSQLBisectionRefused: a token limited to heat sends a statement
// over heat that fails only when a value of power passes a bound. It is
// refused with the same PermissionDenied whatever the bound, before power
// is read: the hot scan counter of power stays where it was. An unlimited
// token shows that the statement does tell the bound.
func TestFlightSQLBisectionRefused(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	s := openStore(t, store.WithMeters(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	reporting, reportingTok := token(t, "reporting", []string{config.ScopeQuery})
	heatOnly, heatTok := token(t, "heat-reports", []string{config.ScopeQuery}, "heat")
	cl := serve(t, s, Options{Tokens: []config.Token{reporting, heatOnly}})
	probe := func(bound string) string {
		return `SELECT count(*) FROM heat.readings WHERE (SELECT CASE WHEN max(value) > ` + bound +
			` THEN error('above') END FROM power.readings) IS NULL`
	}
	ctx := with(t.Context(), reportingTok)
	if _, _, err := query(ctx, cl, probe("1")); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("reporting, bound below: %v", err)
	}
	if _, rows, err := query(ctx, cl, probe("100")); err != nil || len(rows) != 1 || rows[0][0] != "192" {
		t.Fatalf("reporting, bound above: %v %v", rows, err)
	}
	scanned := scannedRows(t, reader, "power")
	if scanned == 0 {
		t.Fatal("the unlimited token's statements scanned no row of power: the counter shows nothing")
	}
	ctx = with(t.Context(), heatTok)
	var msgs []string
	for _, bound := range []string{"1", "100"} {
		_, _, err := query(ctx, cl, probe(bound))
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "power") {
			t.Fatalf("heat only, bound %s: %v", bound, err)
		}
		msgs = append(msgs, status.Convert(err).Message())
	}
	if msgs[0] != msgs[1] {
		t.Fatalf("the refusal depends on the data: %q, %q", msgs[0], msgs[1])
	}
	if got := scannedRows(t, reader, "power"); got != scanned {
		t.Fatalf("a refused statement scanned %d rows of power", got-scanned)
	}
	// system.tables shows the token its own table alone.
	_, rows, err := query(ctx, cl, `SELECT "table" FROM system.tables ORDER BY 1`)
	if err != nil || len(rows) != 1 || rows[0][0] != "heat" {
		t.Fatalf("system.tables for heat only: %v %v", rows, err)
	}
	// A file the engine refuses is the client's doing, not an internal error.
	_, _, err = query(ctx, cl, `SELECT count(*) FROM heat.readings, read_text('/etc/hostname')`)
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "Permission") {
		t.Fatalf("read_text: %v", err)
	}
}

// scannedRows returns the rows of table the hot tier scanned for queries,
// as the store's metrics count them.
func scannedRows(t *testing.T, reader *sdkmetric.ManualReader, table string) int64 {
	t.Helper()
	return metricstest.Value(t, reader, "meterstore.scan.rows", attribute.String(metrics.AttrTable, table))
}

// TestSameAnswerEveryProtocol: a statement naming two tables, with no
// default table, gives the same rows through Flight SQL, POST /v1/query
// without "table", and the store's Query (meterstore query without
// --table); an unqualified readings is refused by each.
func TestSameAnswerEveryProtocol(t *testing.T) {
	s := openStore(t)
	reporting, tok := token(t, "reporting", []string{config.ScopeQuery})
	cl := serve(t, s, Options{Tokens: []config.Token{reporting}})
	h, err := httpapi.New(s, httpapi.Options{Tokens: []config.Token{reporting}})
	if err != nil {
		t.Fatal(err)
	}
	const sql = `SELECT p.day, p.n::VARCHAR AS power, coalesce(h.n, 0)::VARCHAR AS heat
FROM (SELECT strftime("from", '%Y-%m-%d') AS day, count(*) AS n FROM power.readings GROUP BY 1) p
LEFT JOIN (SELECT strftime("from", '%Y-%m-%d') AS day, count(*) AS n FROM meterstore.heat.readings GROUP BY 1) h USING (day)
ORDER BY day`

	res, err := s.Query(t.Context(), "", sql)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]string
	for _, r := range res.Rows {
		want = append(want, []string{r[0].(string), r[1].(string), r[2].(string)})
	}
	if len(want) != 4 || fmt.Sprint(want[0]) != "[2026-03-02 192 192]" || fmt.Sprint(want[3]) != "[2026-03-05 192 0]" {
		t.Fatalf("store.Query: %v", want)
	}
	if names := tableNames(res.Tables); names != "heat,power" {
		t.Errorf("store.Query read %s", names)
	}

	_, got, err := query(with(t.Context(), tok), cl, sql)
	if err != nil || !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("Flight SQL: %v %v\nwant %v", got, err, want)
	}

	body, _ := json.Marshal(map[string]string{"sql": sql})
	r := httptest.NewRequest("POST", "/v1/query", bytes.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+tok)
	r.Header.Set("Accept", "text/csv")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	rows, err := csv.NewReader(w.Body).ReadAll()
	if w.Code != 200 || err != nil || len(rows) == 0 || !slices.EqualFunc(rows[1:], want, slices.Equal) {
		t.Errorf("POST /v1/query: %d %v %v\nwant %v", w.Code, rows, err, want)
	}

	// An unqualified readings names no table.
	const bare = `SELECT count(*) FROM readings`
	if _, err := s.Query(t.Context(), "", bare); !errors.Is(err, store.ErrUnqualified) {
		t.Errorf("store.Query, unqualified: %v", err)
	}
	if _, _, err := query(with(t.Context(), tok), cl, bare); status.Code(err) != codes.InvalidArgument {
		t.Errorf("Flight SQL, unqualified: %v", err)
	}
	body, _ = json.Marshal(map[string]string{"sql": bare})
	r = httptest.NewRequest("POST", "/v1/query", bytes.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+tok)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 400 || !strings.Contains(w.Body.String(), "invalid_query") {
		t.Errorf("POST /v1/query, unqualified: %d %s", w.Code, w.Body)
	}
}

// tableNames returns the names of the tables read, comma-separated.
func tableNames(reads []store.TableRead) string {
	names := make([]string, len(reads))
	for i, r := range reads {
		names[i] = r.Name
	}
	return strings.Join(names, ",")
}

// TestFlightSQLPreparedParams: a prepared statement with placeholders takes
// parameter batches through DoPut: one row answers as the literals do, two
// rows run it twice, their rows one after the other, and a value that
// looks like SQL stays a value.
func TestFlightSQLPreparedParams(t *testing.T) {
	s := openStore(t)
	reporting, tok := token(t, "reporting", []string{config.ScopeQuery})
	cl := serve(t, s, Options{Tokens: []config.Token{reporting}})
	ctx := with(t.Context(), tok)
	_, want, err := query(ctx, cl, `SELECT count(*) AS n FROM power.readings WHERE malo_id = '20000000016' AND "from" >= TIMESTAMPTZ '2026-03-03 00:00:00+00'`)
	if err != nil || len(want) != 1 || want[0][0] == "0" {
		t.Fatalf("literals: %v %v", want, err)
	}
	prep, err := cl.Prepare(ctx, `SELECT count(*) AS n FROM power.readings WHERE malo_id = $1 AND "from" >= $2`)
	if err != nil {
		t.Fatal(err)
	}
	defer prep.Close(ctx)
	// The parameter schema: a field per placeholder, in binding order,
	// of a type not known before a value is bound.
	if ps := prep.ParameterSchema(); ps == nil || fmt.Sprint(ps.Fields()) != "[1: type=null, nullable 2: type=null, nullable]" {
		t.Errorf("the parameter schema of $1, $2: %v", ps)
	}
	for sql, want := range map[string]string{
		`SELECT count(*) FROM power.readings`:                       "[]",
		`SELECT ? AS a, ? AS b, ? AS c`:                             "[1 2 3]",
		`SELECT $2 AS b, $1 AS a, $1 AS again`:                      "[1 2]",
		`SELECT $day AS d, $malo AS m`:                              "[day malo]",
		`SELECT count(*) FROM power.readings WHERE malo_id = $malo`: "[malo]",
	} {
		p, err := cl.Prepare(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		var names []string
		if ps := p.ParameterSchema(); ps != nil {
			for _, f := range ps.Fields() {
				names = append(names, f.Name)
			}
		}
		if p.ParameterSchema() == nil || fmt.Sprint(names) != want {
			t.Errorf("the parameter schema of %s: %v; want %s", sql, p.ParameterSchema(), want)
		}
		p.Close(ctx)
	}
	bind := func(malos []string, froms []time.Time) {
		t.Helper()
		sc := arrow.NewSchema([]arrow.Field{{Name: "malo", Type: arrow.BinaryTypes.String}, {Name: "from", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}}}, nil)
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer b.Release()
		for i := range malos {
			b.Field(0).(*array.StringBuilder).Append(malos[i])
			ts, err := arrow.TimestampFromTime(froms[i], arrow.Microsecond)
			if err != nil {
				t.Fatal(err)
			}
			b.Field(1).(*array.TimestampBuilder).Append(ts)
		}
		rec := b.NewRecordBatch()
		prep.SetParameters(rec)
		rec.Release()
	}
	from := time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)
	bind([]string{"20000000016"}, []time.Time{from})
	info, err := prep.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, got, err := fetch(ctx, cl, info); err != nil || !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("one parameter set: %v %v; want %v", got, err, want)
	}
	bind([]string{"20000000016", "' OR '1'='1"}, []time.Time{from, from})
	info, err = prep.Execute(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, got, err := fetch(ctx, cl, info); err != nil || len(got) != 2 || got[0][0] != want[0][0] || got[1][0] != "0" {
		t.Errorf("two parameter sets, the second a value that looks like SQL: %v %v; want [%v [0]]", got, err, want[0])
	}

	// A column that is a parameter's keeps its name (DuckDB prepares it
	// as "unknown").
	named, err := cl.Prepare(ctx, `SELECT $1 AS x`)
	if err != nil {
		t.Fatal(err)
	}
	defer named.Close(ctx)
	sc := arrow.NewSchema([]arrow.Field{{Name: "p", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	b.Field(0).(*array.StringBuilder).Append("abc")
	rec := b.NewRecordBatch()
	named.SetParameters(rec)
	rec.Release()
	b.Release()
	if info, err = named.Execute(ctx); err != nil {
		t.Fatal(err)
	}
	if schema, got, err := fetch(ctx, cl, info); err != nil || schema.NumFields() != 1 || schema.Field(0).Name != "x" || len(got) != 1 || got[0][0] != "abc" {
		t.Errorf("a parameter's column: %v %v %v; want x, abc", schema, got, err)
	}

	// A value no parameter takes is refused, not ignored.
	sc = arrow.NewSchema([]arrow.Field{{Name: "p", Type: arrow.BinaryTypes.String}, {Name: "q", Type: arrow.BinaryTypes.String}}, nil)
	b = array.NewRecordBuilder(memory.DefaultAllocator, sc)
	b.Field(0).(*array.StringBuilder).Append("abc")
	b.Field(1).(*array.StringBuilder).Append("extra")
	rec = b.NewRecordBatch()
	named.SetParameters(rec)
	rec.Release()
	b.Release()
	if info, err = named.Execute(ctx); err == nil {
		_, _, err = fetch(ctx, cl, info)
	}
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "a value is given for $2") {
		t.Errorf("a value no parameter takes: %v; want InvalidArgument naming $2", err)
	}
}

// TestFlightSQLModes: the header x-meterstore-mode chooses the tiers read:
// power's days 0 and 1 are archived, days 2 and 3 hot; historical reads
// the first two, operational the last two, and the schema says which.
func TestFlightSQLModes(t *testing.T) {
	s := openStore(t)
	reporting, tok := token(t, "reporting", []string{config.ScopeQuery})
	cl := serve(t, s, Options{Tokens: []config.Token{reporting}})
	for mode, want := range map[string]string{"historical": "384", "operational": "384", "auto": "768"} {
		ctx := metadata.AppendToOutgoingContext(with(t.Context(), tok), ModeHeader, mode)
		sc, rows, err := query(ctx, cl, `SELECT count(*) AS n FROM power.readings`)
		if err != nil || len(rows) != 1 || rows[0][0] != want {
			t.Errorf("%s: %v %v; want %s", mode, rows, err, want)
			continue
		}
		if got, _ := sc.Metadata().GetValue("meterstore.mode"); got != mode {
			t.Errorf("%s: the schema says mode %q", mode, got)
		}
	}
	ctx := metadata.AppendToOutgoingContext(with(t.Context(), tok), ModeHeader, "cold")
	if _, _, err := query(ctx, cl, `SELECT 1`); status.Code(err) != codes.InvalidArgument {
		t.Errorf("mode cold: %v", err)
	}
}
