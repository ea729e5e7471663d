package store

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/resolve"
	"github.com/meterstore/meterstore/series"
)

// TestMarkedResolutionSQL pastes system.resolution's marked_resolution_sql
// and resolution_sql of dialect duckdb into a DuckDB of its own over the
// cold table's Parquet files, as a foreign engine would read them, after
// archival of corrected readings and late corrections below W: each gives
// what readings gives below W, and so does the readings view's duckdb
// form. (cmd/meterstore's TestReadingsViewEngines runs every dialect in
// its engine.)
func TestMarkedResolutionSQL(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	if _, err := s.hot.CreatePartitions(ctx, s.tables[0].decl, dayN(0), dayN(5)); err != nil {
		t.Fatal(err)
	}
	for d := range 3 {
		mustWrite(t, s, []Reading{qh(1, d, 1, "A", 1, 1000), qh(1, d, 1, "A", 2, 1500), qh(1, d, 1, "B", 1, 300),
			qh(2, d, 7, "A", 1, 10), qh(2, d, 8, "A", 1, 20)})
	}
	for d := 3; d <= 4; d++ {
		if _, err := s.Archive(ctx, "power", dayN(d)); err != nil {
			t.Fatal(err)
		}
	}
	// Late: a third version of a corrected key, a second of another, and
	// a version of a third key written twice in two deliveries.
	mustWrite(t, s, []Reading{qh(1, 0, 1, "A", 3, 1700), qh(2, 1, 7, "A", 4, 44)})
	mustWrite(t, s, []Reading{qh(2, 1, 7, "A", 5, 55), qh(2, 1, 8, "A", 2, 22)})

	if err := s.RefreshSystemTables(ctx, dayN(5)); err != nil {
		t.Fatal(err)
	}
	res := mustQuery(t, s, `SELECT value FROM system.resolution WHERE setting = 'marked_resolution_sql' AND "table" = 'power' AND dialect = 'duckdb'`)
	marked := res.Rows[0][0].(string)
	res = mustQuery(t, s, `SELECT value FROM system.resolution WHERE setting = 'resolution_sql' AND "table" = 'power' AND dialect = 'duckdb'`)
	unmarked := res.Rows[0][0].(string)
	p, err := s.cold.Plan(ctx, s.tables[0].cold, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	if p, err = p.Local(ctx, s.copies); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Kinds, cold.Current) || !slices.Contains(p.Kinds, cold.Superseded) || !slices.Contains(p.Kinds, cold.Open) {
		t.Fatalf("files of kinds %v: want current and superseded archived ones and late corrections'", p.Kinds)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	files := make([]string, len(p.Files))
	for i, f := range p.Files {
		files[i] = "'" + f + "'"
	}
	if _, err := db.ExecContext(ctx, `CREATE VIEW power AS SELECT * FROM read_parquet([`+strings.Join(files, ", ")+`], union_by_name = true)`); err != nil {
		t.Fatal(err)
	}
	const cols = `SELECT malo_id, channel, epoch_us("from"), CAST(version AS VARCHAR), CAST(value AS VARCHAR) FROM `
	ours := lines(mustQuery(t, s, cols+`readings WHERE "from" < `+ts(p.Watermark)))
	if len(ours) != 8 {
		t.Fatalf("readings below W: %v", ours)
	}
	// The readings view's duckdb form too, which names its columns.
	view := resolve.SQL(resolve.DuckDB, resolve.DuckDB.Ident("power"),
		[]string{"malo_id", "channel", "from", "version", "value", "recorded_at"}, s.tables[0].decl.MergeKey(), true)
	for _, stmt := range []string{marked, unmarked, view} {
		rows, err := db.QueryContext(ctx, cols+`(`+stmt+`) ORDER BY ALL`)
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		var foreign []string
		for rows.Next() {
			var m, ch, v, val string
			var from int64
			if err := rows.Scan(&m, &ch, &from, &v, &val); err != nil {
				t.Fatal(err)
			}
			foreign = append(foreign, fmt.Sprintf("%s|%s|%d|%s|%s", m, ch, from, v, val))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if !slices.Equal(foreign, ours) {
			t.Fatalf("%s over the files:\n%v\nreadings below W:\n%v", stmt, foreign, ours)
		}
	}
}

// TestResolutionDialects: system.resolution gives both statements in each
// dialect of the readings views, and those of Spark and Trino use nothing
// only DuckDB has (QUALIFY, ANTI and SEMI JOIN); they are the views' text,
// over the table's name. ResolutionSQL refuses a dialect it does not
// know.
func TestResolutionDialects(t *testing.T) {
	s := newStore(t)
	res := mustQuery(t, s, `SELECT setting, dialect, value FROM system.resolution WHERE "table" = 'power' AND dialect IS NOT NULL ORDER BY 1, 2`)
	want := []string{"marked_resolution_sql duckdb", "marked_resolution_sql spark", "marked_resolution_sql trino",
		"resolution_sql duckdb", "resolution_sql spark", "resolution_sql trino"}
	var got []string
	for _, r := range res.Rows {
		setting, dialect, value := r[0].(string), r[1].(string), r[2].(string)
		got = append(got, setting+" "+dialect)
		if dialect != "duckdb" {
			for _, only := range []string{"QUALIFY", " ANTI JOIN ", " SEMI JOIN "} {
				if strings.Contains(value, only) {
					t.Errorf("%s in %s uses %s: %s", setting, dialect, only, value)
				}
			}
		}
		var d resolve.Dialect
		for _, x := range resolve.ViewDialects {
			if x.Name == dialect {
				d = x
			}
		}
		var cols []string
		for _, f := range cold.Schema(s.tables[0].decl).Fields() {
			if f.Name != series.ColumnSuperseded {
				cols = append(cols, f.Name)
			}
		}
		if want := resolve.SQL(d, d.Ident("power"), cols, s.tables[0].decl.MergeKey(), setting == "marked_resolution_sql"); value != want {
			t.Errorf("%s in %s:\n%s\nwant the view's text\n%s", setting, dialect, value, want)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("system.resolution's statements: %v, want %v", got, want)
	}
	if _, err := ResolutionSQL(s.tables[0].decl, "postgres"); err == nil {
		t.Fatal("ResolutionSQL in a dialect it does not know")
	}
}
