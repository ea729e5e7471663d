package hot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

// evolveAttempts bounds how often Ensure tries an evolution whose locks
// the lock timeout gave up on before it reports ErrDeferred.
const evolveAttempts = 3

// columns returns the extra columns a stored definition records.
func (d definition) columns() []series.Column {
	cs := make([]series.Column, len(d.Columns))
	for i, c := range d.Columns {
		typ := series.Text
		if c.Type == series.BigInt.String() {
			typ = series.BigInt
		}
		cs[i] = series.Column{Name: c.Name, Type: typ, Identity: c.Identity, Values: c.Values}
	}
	return cs
}

// columnDDL returns the definition of an extra column as CREATE TABLE and
// ADD COLUMN take it, with the CHECK it gets at creation.
func columnDDL(c series.Column) string {
	def := quote(c.Name) + " " + c.ColumnType().String()
	if c.Identity {
		def += " NOT NULL"
	}
	if len(c.Values) > 0 {
		def += fmt.Sprintf(" CONSTRAINT %s CHECK (%s IN %s)", quote(c.Name+"_check"), quote(c.Name), sqlList(c.Values))
	} else if c.ColumnType() == series.Text {
		def += fmt.Sprintf(" CONSTRAINT %s CHECK (%s <> '')", quote(c.Name+"_check"), quote(c.Name))
	}
	return def
}

// evolve applies ev to t's relations in tx and records want as t's
// definition, so that the relation and its record change together or not
// at all. The parent's ALTER reaches every attached partition; partitions
// an archival detached are altered one by one, since a resumed archival
// reads them with the declared columns. Each ALTER waits for its locks no
// longer than the lock timeout of tx.
func (h *Tier) evolve(ctx context.Context, tx pgx.Tx, t *series.Table, ev series.Evolution, want definition) error {
	detached, err := h.detachedPartitions(ctx, tx, t)
	if err != nil {
		return err
	}
	alter := func(rel string, ifExists bool) error {
		for _, c := range ev.Drop {
			stmt := `ALTER TABLE ` + rel + ` DROP COLUMN ` + quote(c.Name)
			if ifExists {
				stmt = `ALTER TABLE ` + rel + ` DROP COLUMN IF EXISTS ` + quote(c.Name)
			}
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("drop column %s of %s: %w", c.Name, rel, err)
			}
		}
		for _, c := range ev.Add {
			stmt := `ALTER TABLE ` + rel + ` ADD COLUMN ` + columnDDL(c)
			if ifExists {
				stmt = `ALTER TABLE ` + rel + ` ADD COLUMN IF NOT EXISTS ` + columnDDL(c)
			}
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("add column %s to %s: %w", c.Name, rel, err)
			}
		}
		return nil
	}
	if err := alter(h.ident(t.Name), false); err != nil {
		return err
	}
	for _, name := range detached {
		if err := alter(h.ident(name), true); err != nil {
			return err
		}
	}
	def, _ := json.Marshal(want)
	if _, err := tx.Exec(ctx, `UPDATE `+h.ident(metaTable)+` SET definition = $2 WHERE name = $1`, t.Name, def); err != nil {
		return fmt.Errorf("record the evolved definition: %w", err)
	}
	h.log.Info("hot: schema evolved as declared", "table", t.Name, "added", columnNames(ev.Add), "dropped", columnNames(ev.Drop))
	return nil
}

// detachedPartitions returns the names of t's partitions that are detached
// entirely; one whose DETACH CONCURRENTLY is pending is still a child of
// the parent, and the parent's ALTER reaches it.
func (h *Tier) detachedPartitions(ctx context.Context, tx pgx.Tx, t *series.Table) ([]string, error) {
	rows, err := tx.Query(ctx, `
SELECT c.relname
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname ~ $2
  AND NOT EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = c.oid)
ORDER BY c.relname`, h.schema, "^"+t.Name+"_p[0-9]{8}$")
	if err != nil {
		return nil, fmt.Errorf("list detached partitions: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list detached partitions: %w", err)
	}
	return names, nil
}

func columnNames(cs []series.Column) []string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return names
}

// ensureRetrying runs Ensure's transaction until it is not deferred by the
// lock timeout, at most evolveAttempts times.
func (h *Tier) ensureRetrying(ctx context.Context, op, table string, fn func(tx pgx.Tx) error) error {
	var err error
	for range evolveAttempts {
		if err = h.ddl(ctx, op, table, fn); !errors.Is(err, ErrDeferred) {
			return err
		}
	}
	return err
}
