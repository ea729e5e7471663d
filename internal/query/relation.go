package query

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"

	"github.com/duckdb/duckdb-go/v2"
)

// A Relation is an in-memory table that every query sees, such as
// system.tables: computed by the caller, not stored in either tier.
type Relation struct {
	Schema, Name string // Schema empty means main
	Columns      []Column
	// Rows hold one value per column, of a Go type the DuckDB appender
	// takes for the column's type (string, int64, float64, bool,
	// time.Time, nil, ...).
	Rows [][]any
}

// A Column is a column of a Relation.
type Column struct {
	Name string
	Type string // a DuckDB type, such as VARCHAR, BIGINT or TIMESTAMPTZ
}

// database is the name of a query's in-memory database, the catalog of
// its relations: a statement may name them fully, as
// meterstore.power.readings, as Flight SQL clients do.
const database = "meterstore"

// createRelations creates rels in conn, filled by an appender.
func createRelations(ctx context.Context, conn *sql.Conn, rels []Relation) error {
	for _, rel := range rels {
		schema := rel.Schema
		if schema == "" {
			schema = "main"
		}
		if _, err := conn.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+database+`.`+ident(schema)); err != nil {
			return fmt.Errorf("query: relation %s.%s: %w", schema, rel.Name, err)
		}
		defs := make([]string, len(rel.Columns))
		for i, c := range rel.Columns {
			defs[i] = ident(c.Name) + " " + c.Type
		}
		if _, err := conn.ExecContext(ctx, `CREATE TABLE `+database+`.`+ident(schema)+`.`+ident(rel.Name)+` (`+strings.Join(defs, ", ")+`)`); err != nil {
			return fmt.Errorf("query: relation %s.%s: %w", schema, rel.Name, err)
		}
		if err := fill(conn, schema, rel); err != nil {
			return fmt.Errorf("query: relation %s.%s: %w", schema, rel.Name, err)
		}
	}
	return nil
}

func fill(conn *sql.Conn, schema string, rel Relation) error {
	if len(rel.Rows) == 0 {
		return nil
	}
	return conn.Raw(func(dc any) error {
		a, err := duckdb.NewAppender(dc.(driver.Conn), database, schema, rel.Name)
		if err != nil {
			return err
		}
		row := make([]driver.Value, len(rel.Columns))
		for n, r := range rel.Rows {
			if len(r) != len(rel.Columns) {
				a.Close()
				return fmt.Errorf("row %d has %d values for %d columns", n, len(r), len(rel.Columns))
			}
			for i, v := range r {
				row[i] = v
			}
			if err := a.AppendRow(row...); err != nil {
				a.Close()
				return fmt.Errorf("row %d: %w", n, err)
			}
		}
		return a.Close()
	})
}
