package hot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

// evolveAttempts bounds how often Ensure tries an evolution whose locks
// the lock timeout gave up on before it reports ErrDeferred.
const evolveAttempts = 3

// columns returns the extra columns a stored definition records, the
// undeclared ones too: declaring one again is held to what it is.
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
// An attribution column's is series.CheckAttribution's rule, for every
// client: at most series.MaxAttributionLen bytes, no control character
// (PostgreSQL's text holds no NUL, and the database is UTF-8). Tables
// declared before the rule keep the CHECK they were made with; the rule
// still holds for every write through the store.
func columnCheck(c series.Column) string {
	switch {
	case len(c.Values) > 0:
		return fmt.Sprintf("CHECK (%s IN %s)", quote(c.Name), sqlList(c.Values))
	case c.Attribution() && c.ColumnType() == series.Text:
		return fmt.Sprintf(`CHECK (octet_length(%[1]s) BETWEEN 1 AND %[2]d AND %[1]s !~ '[\x01-\x1f\x7f-\x9f]')`,
			quote(c.Name), series.MaxAttributionLen)
	case c.ColumnType() == series.Text:
		return fmt.Sprintf("CHECK (%s <> '')", quote(c.Name))
	}
	return ""
}

// Stored returns t as its stored definition records it: t with the extra
// columns the definition declares, undeclared ones left out, and its
// integrity. A table whose declaration Ensure quarantined runs on it, so
// that it takes into its relation every reading that fits there.
func (h *Tier) Stored(ctx context.Context, t *series.Table) (*series.Table, error) {
	const op = "stored definition"
	var stored []byte
	if err := h.pool.QueryRow(ctx, `SELECT definition FROM `+h.ident(metaTable)+` WHERE name = $1`, t.Name).Scan(&stored); err != nil {
		return nil, classify(op, t.Name, err)
	}
	var d definition
	err := json.Unmarshal(stored, &d)
	var i series.Integrity
	if err == nil {
		d = d.normalize()
		i, err = d.integrity()
	}
	if err != nil {
		return nil, &series.Error{Kind: series.InvariantViolation, Op: op, Table: t.Name, Err: fmt.Errorf("stored definition: %w", err)}
	}
	out := *t
	out.Integrity, out.Columns = i, nil
	for k, c := range d.columns() {
		if !d.Columns[k].Undeclared {
			out.Columns = append(out.Columns, c)
		}
	}
	return &out, nil
}

// undeclared returns the definitions of cs, columns no longer declared,
// marked so.
func undeclared(cs []series.Column) []columnDef {
	out := make([]columnDef, len(cs))
	for i, c := range cs {
		vs := slices.Clone(c.Values)
		if vs == nil {
			vs = []string{}
		}
		out[i] = columnDef{Name: c.Name, Type: c.ColumnType().String(), Identity: c.Identity, Values: vs, Undeclared: true}
	}
	return out
}

// evolve adds the columns of ev to t's relations in tx and records want as
// t's definition, so that the relation and its record change together or
// not at all. Each ALTER waits for its locks no longer than the lock
// timeout of tx. The columns ev no longer declares stay as they are: a
// process on the declaration that has them writes and reads them still,
// and an archival by this one refuses a partition that holds values in
// them (see Detach), so none of those values is lost.
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
	exec := func(stmt string) error {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
		return nil
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
	h.log.Info("hot: schema evolved as declared", "table", t.Name, "added", columnNames(ev.Add), "undeclared", columnNames(ev.Undeclared))
	return nil
}

// checkDeclared refuses, with an Unavailable error wrapping
// ErrUndeclaredValues, to let partition name of t be archived under t's
// declaration while it holds a value in a column t does not declare: the
// archival reads the declared columns only, and the partition is dropped
// after it, so the value would be lost. A process whose declaration has
// the column archives it. It reads the definition in tx, whose locks keep
// writers out of the partition.
func (h *Tier) checkDeclared(ctx context.Context, tx pgx.Tx, t *series.Table, name string) error {
	var stored []byte
	if err := tx.QueryRow(ctx, `SELECT definition FROM `+h.ident(metaTable)+` WHERE name = $1`, t.Name).Scan(&stored); err != nil {
		return fmt.Errorf("read the definition of %s: %w", t.Name, err)
	}
	var d definition
	if err := json.Unmarshal(stored, &d); err != nil {
		return &series.Error{Kind: series.InvariantViolation, Op: "archive", Table: t.Name, Err: fmt.Errorf("stored definition: %w", err)}
	}
	var reasons []string
	for _, c := range d.Columns {
		if slices.ContainsFunc(t.Columns, func(x series.Column) bool { return x.Name == c.Name }) {
			continue
		}
		var held bool
		q := `SELECT EXISTS (SELECT 1 FROM ` + h.ident(name) + ` WHERE ` + quote(c.Name) + ` IS NOT NULL)`
		if err := tx.QueryRow(ctx, q).Scan(&held); err != nil {
			return fmt.Errorf("check column %s of %s: %w", c.Name, name, err)
		}
		if held {
			reasons = append(reasons, fmt.Sprintf("readings of partition %s hold values in column %q, which this process does not declare: "+
				"archiving them here would lose those values; a process that declares it archives them, or declare it here", name, c.Name))
		}
	}
	if len(reasons) > 0 {
		return &series.Error{Kind: series.Unavailable, Op: "detach partition", Table: t.Name,
			Err: fmt.Errorf("%w: %s", ErrUndeclaredValues, strings.Join(reasons, "; "))}
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
