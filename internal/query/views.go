package query

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/meterstore/meterstore/series"
)

// The tiers' rows live in the schema tiers: the table tiers.hot, filled
// from the hot tier, and the view tiers.cold over the planned Parquet
// files. readings_versions and readings are views over both.

func createTierTables(ctx context.Context, conn *sql.Conn, l layout) error {
	defs := make([]string, len(l.cols))
	for i, c := range l.cols {
		defs[i] = ident(c.name) + " " + c.typ
	}
	for _, stmt := range []string{
		`CREATE SCHEMA tiers`,
		`CREATE TABLE tiers.hot (` + strings.Join(defs, ", ") + `)`,
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("query: create the tier tables: %w", err)
		}
	}
	return nil
}

func clearHot(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, `DELETE FROM tiers.hot`); err != nil {
		return fmt.Errorf("query: clear the hot rows: %w", err)
	}
	return nil
}

// scanHot appends the hot rows q selects to tiers.hot.
func (e *Engine) scanHot(ctx context.Context, conn *sql.Conn, q series.Range) error {
	return conn.Raw(func(dc any) error {
		a, err := duckdb.NewAppender(dc.(driver.Conn), "", "tiers", "hot")
		if err != nil {
			return fmt.Errorf("query: append the hot rows: %w", err)
		}
		row := make([]driver.Value, len(e.layout.cols))
		err = e.src.Hot(ctx, q, func(r series.Reading) error {
			for i, c := range e.layout.cols {
				v, err := c.get(e.table, &r)
				if err != nil {
					return err
				}
				row[i] = v
			}
			if err := a.AppendRow(row...); err != nil {
				return fmt.Errorf("query: append a hot row: %w", err)
			}
			return nil
		})
		if cerr := a.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("query: append the hot rows: %w", cerr)
		}
		if err != nil {
			return fmt.Errorf("query: hot tier: %w", err)
		}
		return nil
	})
}

// A view says what readings_versions shows of the tiers besides their
// split: the part of a past snapshot, and recorded_at ceilings.
type view struct {
	asOf    *past     // the snapshot read as of, if any
	ceiling time.Time // on the current tiers' rows; zero: none
	knownAt time.Time // on the past snapshot's rows; zero: none
}

// A past snapshot's files, which answer below its W.
type past struct {
	files []string
	s     split
}

// createViews creates tiers.cold over files and the two relations. In a
// read as of a past snapshot, its rows below its W come from tiers.past
// over its files, and the current tiers show only rows at or above it.
func createViews(ctx context.Context, conn *sql.Conn, l layout, files []string, s split, v view) error {
	cold, err := coldSelect(ctx, conn, l, files)
	if err != nil {
		return err
	}
	coldWhere, hotWhere := []string{"false"}, []string{"true"}
	if s.hasW {
		w := timestamptz(s.w)
		coldWhere, hotWhere = []string{`"from" < ` + w}, []string{`"from" >= ` + w}
	}
	if !v.ceiling.IsZero() {
		c := `"recorded_at" <= ` + timestamptz(v.ceiling)
		coldWhere, hotWhere = append(coldWhere, c), append(hotWhere, c)
	}
	cols := l.names()
	stmts := []string{`CREATE VIEW tiers.cold AS ` + cold}
	var parts []string
	if v.asOf != nil {
		pastSel, err := coldSelect(ctx, conn, l, v.asOf.files)
		if err != nil {
			return err
		}
		pastWhere := []string{"false"}
		if v.asOf.s.hasW {
			w := timestamptz(v.asOf.s.w)
			pastWhere = []string{`"from" < ` + w}
			coldWhere, hotWhere = append(coldWhere, `"from" >= `+w), append(hotWhere, `"from" >= `+w)
		}
		if !v.knownAt.IsZero() {
			pastWhere = append(pastWhere, `"recorded_at" <= `+timestamptz(v.knownAt))
		}
		stmts = append(stmts, `CREATE VIEW tiers.past AS `+pastSel)
		parts = append(parts, `SELECT `+cols+` FROM tiers.past WHERE `+strings.Join(pastWhere, " AND "))
	}
	parts = append(parts,
		`SELECT `+cols+` FROM tiers.cold WHERE `+strings.Join(coldWhere, " AND "),
		`SELECT `+cols+` FROM tiers.hot WHERE `+strings.Join(hotWhere, " AND "))
	stmts = append(stmts,
		`CREATE VIEW main.readings_versions AS `+strings.Join(parts, ` UNION ALL `),
		`CREATE VIEW main.readings AS `+ResolutionSQL("main.readings_versions", l.key))
	for _, stmt := range stmts {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("query: create the views: %w", err)
		}
	}
	return nil
}

// coldSelect returns the SELECT of the cold rows from files: every column
// of the layout, cast to its type, NULL where no file has it (a nullable
// column added after they were written). A column of the files that the
// table does not declare is not shown.
func coldSelect(ctx context.Context, conn *sql.Conn, l layout, files []string) (string, error) {
	sel := make([]string, len(l.cols))
	if len(files) == 0 {
		for i, c := range l.cols {
			sel[i] = `CAST(NULL AS ` + c.typ + `) AS ` + ident(c.name)
		}
		return `SELECT ` + strings.Join(sel, ", ") + ` WHERE false`, nil
	}
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = quote(f)
	}
	// Not hive partitioning: the paths name partitions that are columns
	// of the files too.
	scan := `read_parquet([` + strings.Join(quoted, ", ") + `], union_by_name = true, hive_partitioning = false)`
	rows, err := conn.QueryContext(ctx, `DESCRIBE SELECT * FROM `+scan)
	if err != nil {
		return "", fmt.Errorf("query: read the schema of the cold files: %w", err)
	}
	defer rows.Close()
	have := map[string]bool{}
	names, err := rows.Columns()
	if err != nil {
		return "", fmt.Errorf("query: read the schema of the cold files: %w", err)
	}
	for rows.Next() {
		vals := make([]any, len(names))
		ptrs := make([]any, len(names))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", fmt.Errorf("query: read the schema of the cold files: %w", err)
		}
		if name, ok := vals[0].(string); ok {
			have[name] = true
		}
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("query: read the schema of the cold files: %w", err)
	}
	for i, c := range l.cols {
		src := "NULL"
		if have[c.name] {
			src = ident(c.name)
		}
		sel[i] = `CAST(` + src + ` AS ` + c.typ + `) AS ` + ident(c.name)
	}
	return `SELECT ` + strings.Join(sel, ", ") + ` FROM ` + scan, nil
}

// timestamptz returns t as a TIMESTAMPTZ literal, at microseconds.
func timestamptz(t time.Time) string {
	return `TIMESTAMPTZ ` + quote(t.UTC().Format("2006-01-02 15:04:05.000000")+"+00")
}

// ResolutionSQL returns the version resolution of the readings in relation,
// whose merge key is key: per merge key the highest version, then the
// latest recorded_at. It defines the readings view, and system.resolution
// offers it to engines that read a table's Iceberg files directly.
func ResolutionSQL(relation string, key []string) string {
	quoted := make([]string, len(key))
	for i, k := range key {
		quoted[i] = ident(k)
	}
	return `SELECT * FROM ` + relation + ` QUALIFY row_number() OVER (PARTITION BY ` +
		strings.Join(quoted, ", ") + ` ORDER BY "version" DESC, "recorded_at" DESC) = 1`
}
