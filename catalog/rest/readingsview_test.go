package rest_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/google/uuid"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/catalog/catalogtest"
	"github.com/meterstore/meterstore/catalog/rest"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/resolve"
	"github.com/meterstore/meterstore/series"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readingsKey is the merge key of the tables readingsTable creates.
var readingsKey = []string{"malo_id", "obis_code", "from", "channel"}

// readingsTable creates table ns.name as the cold tier would: its schema,
// with an identity column channel and an attribute note, and its merge key
// property.
// views installs the cold tier's readings views, as meterstore serve does.
var views = rest.WithViews(cold.ReadingsViews{})

func readingsTable(t *testing.T, c *catalog.Catalog, ns, name string) *table.Table {
	t.Helper()
	decl := &series.Table{Name: name, TimeModel: series.Interval,
		Columns: []series.Column{{Name: "channel", Identity: true}, {Name: "note"}}}
	tbl, err := c.CreateTable(t.Context(), table.Identifier{ns, name}, cold.Schema(decl),
		icecatalog.WithProperties(iceberg.Properties{cold.PropMergeKey: strings.Join(readingsKey, ",")}))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// appendReading appends one reading to tbl in a snapshot whose summary
// carries props.
func appendReading(t *testing.T, tbl *table.Table, props iceberg.Properties) *table.Table {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	row := `{"malo_id": "51238696781", "obis_code": "1-1:1.29.0", "sparte": "strom", "from": "2026-03-01T00:00:00Z",
		"to": "2026-03-01T00:15:00Z", "value": "1.500000", "unit": "kWh", "quality": "220", "resolution": "PT15M",
		"version": "1", "version_scope": "9900000000003:2026-03", "recorded_at": "2026-03-02T00:00:00Z",
		"balancing_day": "2026-03-01", "channel": "a", "superseded": false}`
	at, err := array.TableFromJSON(memory.DefaultAllocator, sc, []string{"[" + row + "]"})
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	tx := tbl.NewTransaction()
	if err := tx.AppendTable(t.Context(), at, 1, props); err != nil {
		t.Fatal(err)
	}
	tbl, err = tx.Commit(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestReadingsViewREST: each table the cold tier wrote has a readings
// view, listed, loaded and found by HEAD; its metadata is valid view
// metadata (iceberg-go's REST client loads it), the same on every load,
// with the table's columns but superseded and the watermark of its current
// snapshot; what is no such view is 404 NoSuchViewException, and every
// write on a view route is refused.
func TestReadingsViewREST(t *testing.T) {
	c := catalogtest.Backends()[1].Open(t)
	power := readingsTable(t, c, "metering", "power")
	power = appendReading(t, power, iceberg.Properties{cold.SummaryWatermark: "2026-03-02T00:00:00.000000Z"})
	catalogtest.CreateTable(t, c, "plain", nil) // no merge key: no view
	readingsTable(t, c, "metering", "gas")
	catalogtest.CreateTable(t, c, "gas_readings", nil) // a table hides the view of its name
	srv := httptest.NewServer(rest.Handler(c, nil, views))
	defer srv.Close()

	list := restDo(t, srv.URL, "GET", "/v1/namespaces/metering/views", "")
	ids, _ := list.body["identifiers"].([]any)
	if list.code != 200 || len(ids) != 1 || fmt.Sprint(ids[0]) != "map[name:power_readings namespace:[metering]]" {
		t.Fatalf("views: %d %s", list.code, list.raw)
	}

	load := restDo(t, srv.URL, "GET", "/v1/namespaces/metering/views/power_readings", "")
	if load.code != 200 {
		t.Fatalf("load: %d %s", load.code, load.raw)
	}
	loc, _ := load.body["metadata-location"].(string)
	if !strings.HasPrefix(loc, power.Location()+"/metadata/view-power_readings-") || !strings.HasSuffix(loc, ".metadata.json") {
		t.Errorf("metadata-location %q", loc)
	}
	if cfg, ok := load.body["config"].(map[string]any); !ok || len(cfg) != 0 {
		t.Errorf("config %v", load.body["config"])
	}
	var whole struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	mustUnmarshal(t, load.raw, &whole)
	md, err := view.ParseMetadataBytes(whole.Metadata)
	if err != nil {
		t.Fatalf("the view metadata does not parse: %v\n%s", err, whole.Metadata)
	}
	if md.FormatVersion() != 1 || md.Location() != power.Location() ||
		md.ViewUUID() != uuid.NewSHA1(power.Metadata().TableUUID(), []byte("power_readings")) {
		t.Errorf("view metadata: version %d, location %q, uuid %s", md.FormatVersion(), md.Location(), md.ViewUUID())
	}
	v := md.CurrentVersion()
	if v == nil || len(md.Versions()) != 1 || !slices.Equal(v.DefaultNamespace, []string{"metering"}) ||
		v.VersionID != int64(power.Schema().ID+1) || v.TimestampMS != power.Metadata().LastUpdatedMillis() {
		t.Fatalf("view version %+v", v)
	}
	var dialects []string
	sqls := map[string]string{}
	for _, r := range v.Representations {
		dialects = append(dialects, r.Dialect)
		sqls[r.Dialect] = r.Sql
		if r.Type != "sql" {
			t.Errorf("representation type %q", r.Type)
		}
	}
	if !slices.Equal(dialects, []string{"spark", "trino", "duckdb"}) {
		t.Errorf("dialects %v", dialects)
	}
	// Spark and Trino differ in quoting and in the names of their array
	// functions only; DuckDB joins the late keys where they test EXISTS
	// (see resolve.Dialect).
	sparkAsTrino := strings.NewReplacer("`", `"`, "collect_set(", "array_agg(", "array_contains(", "contains(", "named_struct(", "ROW(").
		Replace(regexp.MustCompile(`'k[0-9]+', `).ReplaceAllString(sqls["spark"], ""))
	if !strings.Contains(sqls["spark"], "FROM `metering`.`power` r") || strings.Contains(sqls["spark"], "QUALIFY") ||
		!strings.Contains(sqls["spark"], "collect_set(named_struct('k0', `malo_id`, 'k1', `obis_code`, 'k2', `channel`))") || sparkAsTrino != sqls["trino"] {
		t.Errorf("the dialects differ in more than quoting:\n%s\n%s", sqls["spark"], sqls["trino"])
	}
	if !strings.Contains(sqls["duckdb"], `FROM "metering"."power" r ANTI JOIN`) || strings.Contains(sqls["duckdb"], "EXISTS") {
		t.Errorf("the duckdb form tests EXISTS, or not over the table:\n%s", sqls["duckdb"])
	}
	var wantFields []iceberg.NestedField
	for _, f := range power.Schema().Fields() {
		if f.Name != series.ColumnSuperseded {
			wantFields = append(wantFields, f)
		}
	}
	if got := md.CurrentSchema().Fields(); !slices.EqualFunc(got, wantFields, func(a, b iceberg.NestedField) bool {
		return a.ID == b.ID && a.Name == b.Name && a.Type.Equals(b.Type) && a.Required == b.Required
	}) || len(got) != len(power.Schema().Fields())-1 {
		t.Errorf("view columns %v, want the table's without superseded", got)
	}
	props := md.Properties()
	if props[cold.SummaryWatermark] != "2026-03-02T00:00:00.000000Z" || props["meterstore.table"] != "metering.power" ||
		props[cold.PropMergeKey] != strings.Join(readingsKey, ",") || props["comment"] == "" {
		t.Errorf("view properties %v", props)
	}

	// The same answer on every load and from every handler.
	other := httptest.NewServer(rest.Handler(c, map[string]string{"s3.endpoint": "http://127.0.0.1:9"}, views))
	defer other.Close()
	for _, base := range []string{srv.URL, other.URL} {
		if again := restDo(t, base, "GET", "/v1/namespaces/metering/views/power_readings", ""); !bytes.Equal(again.raw, load.raw) {
			t.Errorf("a second load differs:\n%s\n%s", load.raw, again.raw)
		}
	}
	// A commit to the table gives the view its new watermark and location.
	appendReading(t, power, iceberg.Properties{cold.SummaryWatermark: "2026-03-03T00:00:00.000000Z"})
	moved := restDo(t, srv.URL, "GET", "/v1/namespaces/metering/views/power_readings", "")
	mustUnmarshal(t, moved.raw, &whole)
	if md2, err := view.ParseMetadataBytes(whole.Metadata); err != nil || md2.Properties()[cold.SummaryWatermark] != "2026-03-03T00:00:00.000000Z" ||
		moved.body["metadata-location"] == loc {
		t.Errorf("after a commit: %v %s", err, moved.raw)
	}

	// Named by ViewCatalog, the version carries its default catalog, as
	// Trino needs to analyse it; without, none (v above).
	if v.DefaultCatalog != "" || bytes.Contains(load.raw, []byte("default-catalog")) {
		t.Errorf("a default catalog without ViewCatalog: %q", v.DefaultCatalog)
	}
	named := httptest.NewServer(rest.Handler(c, nil, views, rest.ViewCatalog("meterstore")))
	defer named.Close()
	nl := restDo(t, named.URL, "GET", "/v1/namespaces/metering/views/power_readings", "")
	mustUnmarshal(t, nl.raw, &whole)
	if nmd, err := view.ParseMetadataBytes(whole.Metadata); err != nil || nmd.CurrentVersion().DefaultCatalog != "meterstore" ||
		!slices.Equal(nmd.CurrentVersion().DefaultNamespace, []string{"metering"}) {
		t.Errorf("with ViewCatalog: %v %s", err, nl.raw)
	}
	// Its Spark and Trino SQL name the table in that catalog: Spark would
	// take "meterstore" of meterstore.power for a catalog of that name.
	// DuckDB's names none, as its user attaches the catalog under any name.
	if nmd, err := view.ParseMetadataBytes(whole.Metadata); err == nil {
		for _, r := range nmd.CurrentVersion().Representations {
			want := map[string]string{"spark": "FROM `meterstore`.`metering`.`power` r", "trino": `FROM "meterstore"."metering"."power" r`,
				"duckdb": `FROM "metering"."power" r`}[r.Dialect]
			if want == "" || !strings.Contains(r.Sql, want) || (r.Dialect == "duckdb" && strings.Contains(r.Sql, `"meterstore".`)) {
				t.Errorf("with ViewCatalog, the %s SQL: %s", r.Dialect, r.Sql)
			}
		}
	}

	// iceberg-go's REST client loads it.
	rc, _ := restClient(t, rest.Handler(c, nil, views))
	got, err := rc.LoadView(t.Context(), table.Identifier{"metering", "power_readings"})
	if err != nil {
		t.Fatalf("iceberg-go LoadView: %v", err)
	}
	if got.CurrentSchema().NumFields() != len(wantFields) {
		t.Errorf("iceberg-go's view has %d columns", got.CurrentSchema().NumFields())
	}
	if ok, err := rc.CheckViewExists(t.Context(), table.Identifier{"metering", "power_readings"}); !ok || err != nil {
		t.Errorf("iceberg-go CheckViewExists: %v %v", ok, err)
	}

	for _, tc := range []struct {
		method, path string
		code         int
		typ          string
	}{
		{"HEAD", "/v1/namespaces/metering/views/power_readings", 204, ""},
		{"HEAD", "/v1/namespaces/metering/views/water_readings", 404, ""},
		{"HEAD", "/v1/namespaces/metering/views/gas_readings", 404, ""},
		{"GET", "/v1/namespaces/metering/views/water_readings", 404, "NoSuchViewException"},
		{"GET", "/v1/namespaces/metering/views/power", 404, "NoSuchViewException"},
		{"GET", "/v1/namespaces/metering/views/_readings", 404, "NoSuchViewException"},
		{"GET", "/v1/namespaces/metering/views/plain_readings", 404, "NoSuchViewException"},
		{"GET", "/v1/namespaces/metering/views/gas_readings", 404, "NoSuchViewException"},
		{"GET", "/v1/namespaces/nope/views/power_readings", 404, "NoSuchViewException"},
		{"GET", "/v1/namespaces/metering%1Fpower/views/x_readings", 404, "NoSuchViewException"},
		{"GET", "/v1/namespaces/nope/views", 404, "NoSuchNamespaceException"},
		{"POST", "/v1/namespaces/metering/views", 405, "MethodNotAllowedException"},
		{"POST", "/v1/namespaces/metering/views/power_readings", 405, "MethodNotAllowedException"},
		{"DELETE", "/v1/namespaces/metering/views/power_readings", 405, "MethodNotAllowedException"},
		{"PUT", "/v1/namespaces/metering/views/power_readings", 405, "MethodNotAllowedException"},
		{"POST", "/v1/views/rename", 405, "MethodNotAllowedException"},
	} {
		a := restDo(t, srv.URL, tc.method, tc.path, "")
		if a.code != tc.code || a.errType() != tc.typ {
			t.Errorf("%s %s: %d %s, want %d %s", tc.method, tc.path, a.code, a.raw, tc.code, tc.typ)
		}
	}
	// A writable catalog serves no view writes either.
	rw := httptest.NewServer(rest.WritableHandler(c, nil, views))
	defer rw.Close()
	for _, m := range []string{"POST", "DELETE"} {
		if a := restDo(t, rw.URL, m, "/v1/namespaces/metering/views/power_readings", "{}"); a.code != 405 {
			t.Errorf("writable %s view: %d %s", m, a.code, a.raw)
		}
	}
	if a := restDo(t, rw.URL, "POST", "/v1/namespaces/metering/views", "{}"); a.code != 405 {
		t.Errorf("writable create view: %d %s", a.code, a.raw)
	}
	if ok, _ := c.CheckTableExists(t.Context(), table.Identifier{"metering", "power"}); !ok {
		t.Error("the table went")
	}
}

func mustUnmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
}

// TestReadingsViewSQL runs the view's DuckDB SQL on versions whose marks
// cover every case (marked superseded, marked current, late corrections
// above and below the marked version, files without marks, a tie in
// version broken by recorded_at) and holds its rows equal to the version
// rule over every row, resolve.SQL unmarked in the query engine's dialect, which ignores the marks. Each
// of three broken variants of the SQL must differ from it: the fixture
// can tell. A table without the column is resolved by the rule alone.
func TestReadingsViewSQL(t *testing.T) {
	c := catalogtest.Backends()[1].Open(t)
	readingsTable(t, c, "metering", "power")
	srv := httptest.NewServer(rest.Handler(c, nil, views))
	defer srv.Close()
	load := restDo(t, srv.URL, "GET", "/v1/namespaces/metering/views/power_readings", "")
	var whole struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	mustUnmarshal(t, load.raw, &whole)
	md, err := view.ParseMetadataBytes(whole.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	sqls := map[string]string{}
	for _, r := range md.CurrentVersion().Representations {
		sqls[r.Dialect] = r.Sql
	}
	cols := make([]string, 0)
	for _, f := range md.CurrentSchema().Fields() {
		cols = append(cols, `"`+f.Name+`"`)
	}

	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	exec := func(q string) {
		t.Helper()
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
	}
	exec(`CREATE SCHEMA metering`)
	exec(`CREATE TABLE metering.power (malo_id VARCHAR, melo_id VARCHAR, obis_code VARCHAR, sparte VARCHAR,
		"from" TIMESTAMPTZ, "to" TIMESTAMPTZ, value DECIMAL(18,6), unit VARCHAR, quality VARCHAR, resolution VARCHAR,
		version DECIMAL(20,0), version_scope VARCHAR, recorded_at TIMESTAMPTZ, balancing_day DATE, subject_id VARCHAR,
		channel VARCHAR, note VARCHAR, superseded BOOLEAN)`)
	// key, channel, version, recorded_at (hour), superseded.
	for _, r := range []struct {
		malo, channel string
		version, hour int
		sup           string
	}{
		{"m1", "a", 1, 1, "true"}, {"m1", "a", 2, 2, "false"}, // marked
		{"m1", "b", 1, 1, "false"}, {"m1", "b", 2, 3, "NULL"}, // a late correction wins
		{"m2", "a", 2, 1, "false"}, {"m2", "a", 1, 3, "NULL"}, // a late redelivery of an older version loses
		{"m2", "b", 1, 1, "NULL"}, {"m2", "b", 2, 2, "NULL"}, // a file older than the column
		{"m3", "a", 1, 1, "false"},                                                       // one version
		{"m3", "b", 1, 1, "true"}, {"m3", "b", 2, 2, "false"}, {"m3", "b", 3, 3, "NULL"}, // marked, then corrected late
		{"m4", "a", 5, 1, "false"}, {"m4", "a", 5, 4, "NULL"}, // one version twice: the later recorded_at wins
	} {
		exec(fmt.Sprintf(`INSERT INTO metering.power VALUES ('%s', NULL, '1-1:1.29.0', 'strom', TIMESTAMPTZ '2026-03-01 00:00:00+00',
			TIMESTAMPTZ '2026-03-01 00:15:00+00', %d.%d, 'kWh', '220', 'PT15M', %d, 's', TIMESTAMPTZ '2026-03-02 %02d:00:00+00',
			DATE '2026-03-01', NULL, '%s', NULL, %s)`, r.malo, r.version, r.hour, r.version, r.hour, r.channel, r.sup))
	}
	oracle := `SELECT ` + strings.Join(cols, ", ") + ` FROM (` + resolve.SQL(resolve.Engine, `metering.power`, nil, readingsKey, false) + `)`
	diff := func(q string) (n, rows int) {
		t.Helper()
		err := db.QueryRowContext(t.Context(), `WITH v AS (`+q+`), o AS (`+oracle+`)
			SELECT (SELECT count(*) FROM ((SELECT * FROM v EXCEPT ALL SELECT * FROM o) UNION ALL (SELECT * FROM o EXCEPT ALL SELECT * FROM v))),
			       (SELECT count(*) FROM v)`).Scan(&n, &rows)
		if err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
		return n, rows
	}
	// The trino form runs in DuckDB too (array_agg, contains, ROW); the
	// spark form differs from it in quoting and function names only
	// (TestReadingsViewREST).
	for _, form := range []struct {
		dialect string
		broken  []struct{ what, from, to string }
	}{
		{"duckdb", []struct{ what, from, to string }{
			{"late corrections ignored by the marked rows", ` r ANTI JOIN `, ` r LEFT JOIN `},
			{"marked rows of a late key left out of the ranking", `IS NULL OR r."superseded" = false`, `IS NULL OR false`},
			{"marks ignored", `WHERE r."superseded" = false UNION ALL`, `WHERE r."superseded" IS NOT NULL UNION ALL`},
		}},
		{"trino", []struct{ what, from, to string }{
			{"late corrections ignored by the marked rows", `r."superseded" = false AND (o.`, `r."superseded" = false OR (o.`},
			{"a late key matched on its instant alone", `IS NULL OR NOT contains(`, `IS NULL OR NOT true OR contains(`},
			{"marked rows of a late key left out of the ranking", `IS NULL OR r."superseded" = false`, `IS NULL OR false`},
		}},
	} {
		viewSQL := sqls[form.dialect]
		if n, rows := diff(viewSQL); n != 0 || rows != 7 {
			t.Errorf("%s: the view differs from the rule in %d rows, has %d rows, want 7:\n%s", form.dialect, n, rows, viewSQL)
		}
		for _, broken := range form.broken {
			b := strings.Replace(viewSQL, broken.from, broken.to, 1)
			if b == viewSQL {
				t.Fatalf("%s: %s: %q is not in the SQL", form.dialect, broken.what, broken.from)
			}
			if n, _ := diff(b); n == 0 {
				t.Errorf("%s: %s: the fixture does not tell", form.dialect, broken.what)
			}
		}
	}

	// Without the column, the rule over every row.
	decl := &series.Table{Name: "old", TimeModel: series.Interval,
		Columns: []series.Column{{Name: "channel", Identity: true}, {Name: "note"}}}
	full := cold.Schema(decl)
	var fields []iceberg.NestedField
	for _, f := range full.Fields() {
		if f.Name != series.ColumnSuperseded {
			fields = append(fields, f)
		}
	}
	if _, err := c.CreateTable(t.Context(), table.Identifier{"metering", "old"}, iceberg.NewSchema(0, fields...),
		icecatalog.WithProperties(iceberg.Properties{cold.PropMergeKey: strings.Join(readingsKey, ",")})); err != nil {
		t.Fatal(err)
	}
	load = restDo(t, srv.URL, "GET", "/v1/namespaces/metering/views/old_readings", "")
	mustUnmarshal(t, load.raw, &whole)
	if md, err = view.ParseMetadataBytes(whole.Metadata); err != nil {
		t.Fatal(err)
	}
	var viewSQL string
	for _, r := range md.CurrentVersion().Representations {
		if r.Dialect == "duckdb" {
			viewSQL = r.Sql
		}
	}
	if strings.Contains(viewSQL, "superseded") || md.Properties()["meterstore.marked"] != "false" {
		t.Fatalf("a table without marks: %s", viewSQL)
	}
	exec(`CREATE TABLE metering.old AS SELECT * EXCLUDE (superseded) FROM metering.power`)
	oracle = `SELECT ` + strings.Join(cols, ", ") + ` FROM (` + resolve.SQL(resolve.Engine, `metering.old`, nil, readingsKey, false) + `)`
	if n, rows := diff(viewSQL); n != 0 || rows != 7 {
		t.Errorf("the unmarked view differs from the rule in %d rows, has %d rows:\n%s", n, rows, viewSQL)
	}
}
