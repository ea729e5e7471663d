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
	if check := columnCheck(c); check != "" {
		def += " CONSTRAINT " + quote(c.Name+"_check") + " " + check
	}
	return def
}

// columnCheck returns the CHECK of an extra column, or "" if it has none.
func columnCheck(c series.Column) string {
	switch {
	case len(c.Values) > 0:
		return fmt.Sprintf("CHECK (%s IN %s)", quote(c.Name), sqlList(c.Values))
	case c.ColumnType() == series.Text:
		return fmt.Sprintf("CHECK (%s <> '')", quote(c.Name))
	}
	return ""
}

// evolve applies ev to t's relations in tx and records want as t's
// definition, so that the relation and its record change together or not
// at all. Each ALTER waits for its locks no longer than the lock timeout
// of tx.
//
// The parent's ALTER reaches every attached partition. An added column's
// CHECK is added NOT VALID there: checking it would scan every row under
// ACCESS EXCLUSIVE, and every row holds NULL, which passes; new rows are
// checked all the same, and validatePending validates it afterwards under
// a lock that blocks no reader or writer. Partitions an archival detached
// are altered one by one, since a resumed archival reads them with the
// declared columns; nothing writes to them, so their CHECK is checked at
// once.
func (h *Tier) evolve(ctx context.Context, tx pgx.Tx, t *series.Table, ev series.Evolution, want definition) error {
	detached, err := h.detachedPartitions(ctx, tx, t)
	if err != nil {
		return err
	}
	parent := h.ident(t.Name)
	if err := h.checkDropEmpty(ctx, tx, t, ev.Drop); err != nil {
		return err
	}
	exec := func(stmt string) error {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
		return nil
	}
	for _, c := range ev.Drop {
		if err := exec(`ALTER TABLE ` + parent + ` DROP COLUMN ` + quote(c.Name)); err != nil {
			return err
		}
	}
	for _, c := range ev.Add {
		if err := exec(`ALTER TABLE ` + parent + ` ADD COLUMN ` + quote(c.Name) + " " + c.ColumnType().String()); err != nil {
			return err
		}
		if check := columnCheck(c); check != "" {
			if err := exec(`ALTER TABLE ` + parent + ` ADD CONSTRAINT ` + quote(c.Name+"_check") + " " + check + ` NOT VALID`); err != nil {
				return err
			}
		}
	}
	for _, name := range detached {
		rel := h.ident(name)
		for _, c := range ev.Drop {
			if err := exec(`ALTER TABLE ` + rel + ` DROP COLUMN IF EXISTS ` + quote(c.Name)); err != nil {
				return err
			}
		}
		for _, c := range ev.Add {
			if err := exec(`ALTER TABLE ` + rel + ` ADD COLUMN IF NOT EXISTS ` + columnDDL(c)); err != nil {
				return err
			}
		}
	}
	def, _ := json.Marshal(want)
	if _, err := tx.Exec(ctx, `UPDATE `+h.ident(metaTable)+` SET definition = $2 WHERE name = $1`, t.Name, def); err != nil {
		return fmt.Errorf("record the evolved definition: %w", err)
	}
	h.log.Info("hot: schema evolved as declared", "table", t.Name, "added", columnNames(ev.Add), "dropped", columnNames(ev.Drop))
	return nil
}

// checkDropEmpty quarantines the table rather than drop a column that holds a value in a row of
// t's attached partitions: those readings are not archived yet, and DROP
// COLUMN would delete the values with no copy anywhere. An older
// declaration is the usual cause, such as a process started with a
// configuration from before the column was added. Once the readings are
// archived, their values stay in the cold tier's older snapshots and the
// drop goes ahead. Detached partitions are not looked at: they are
// archived and wait for the reader grace, or their archival, cut short,
// resumes with the declared columns, without the dropped one in any case.
func (h *Tier) checkDropEmpty(ctx context.Context, tx pgx.Tx, t *series.Table, drop []series.Column) error {
	for _, c := range drop {
		var held bool
		q := `SELECT EXISTS (SELECT 1 FROM ` + h.ident(t.Name) + ` WHERE ` + quote(c.Name) + ` IS NOT NULL)`
		if err := tx.QueryRow(ctx, q).Scan(&held); err != nil {
			return fmt.Errorf("check column %s before dropping it: %w", c.Name, err)
		}
		if held {
			return &series.QuarantineError{Table: t.Name, Reasons: []string{fmt.Sprintf(
				"column %q is no longer declared, but readings not yet archived hold values in it; dropping it would delete them: declare it again, or drop it once they are archived", c.Name)}}
		}
	}
	return nil
}

// validatePending validates the CHECK constraints of t's parent that an
// evolution added NOT VALID, in a transaction of its own: VALIDATE takes
// SHARE UPDATE EXCLUSIVE, which blocks no reader or writer, and scans
// every partition. A constraint it cannot validate now, such as when the
// lock timeout passes, stays NOT VALID, which checks every new row all
// the same; the next Ensure tries again.
func (h *Tier) validatePending(ctx context.Context, t *series.Table) {
	err := h.ddl(ctx, "validate", t.Name, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT conname FROM pg_constraint WHERE conrelid = to_regclass($1) AND contype = 'c' AND NOT convalidated ORDER BY conname`, h.ident(t.Name))
		if err != nil {
			return err
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, name := range names {
			if _, err := tx.Exec(ctx, `ALTER TABLE `+h.ident(t.Name)+` VALIDATE CONSTRAINT `+quote(name)); err != nil {
				return fmt.Errorf("validate %s: %w", name, err)
			}
			h.log.Info("hot: constraint validated", "table", t.Name, "constraint", name)
		}
		return nil
	})
	if err != nil {
		h.log.Warn("hot: constraint left NOT VALID; new rows are checked, the next Ensure validates it", "table", t.Name, "err", err)
	}
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
