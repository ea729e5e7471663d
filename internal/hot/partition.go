package hot

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

// A Partition is one range partition of a hot table.
type Partition struct {
	Name     string
	From, To time.Time // the bounds [From, To) on "from"
	// Attached is false for a partition that was detached for archival
	// and not yet dropped. Its rows are no longer read by Scan.
	Attached bool
}

// partitionStart parses the start out of a partition name of t, which is
// deterministic: <table>_pYYYYMMDD, the day its range begins (UTC).
func partitionStart(t *series.Table, name string) (time.Time, bool) {
	suffix, ok := strings.CutPrefix(name, t.Name+"_p")
	if !ok || len(suffix) != 8 || !digits(suffix) {
		return time.Time{}, false
	}
	start, err := time.Parse("20060102", suffix)
	if err != nil || !t.Width.Start(start).Equal(start) {
		return time.Time{}, false
	}
	return start, true
}

// ddlLockKey is the second half of the advisory lock that serializes
// partition DDL of one table; day numbers, the other second halves, never
// reach it.
const ddlLockKey = math.MinInt32

// Partitions lists the partitions of t, attached and detached, by start.
func (h *Tier) Partitions(ctx context.Context, t *series.Table) ([]Partition, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	parts, err := h.partitions(ctx, h.pool, t)
	if err != nil {
		return nil, classify("list partitions", t.Name, err)
	}
	return parts, nil
}

// partitions lists the partitions of t through q.
func (h *Tier) partitions(ctx context.Context, q querier, t *series.Table) ([]Partition, error) {
	rows, err := q.Query(ctx, `
SELECT c.relname, i.inhrelid IS NOT NULL AND NOT i.inhdetachpending
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_inherits i ON i.inhrelid = c.oid AND i.inhparent = to_regclass($3)
WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname ~ $2
ORDER BY c.relname`, h.schema, "^"+t.Name+"_p[0-9]{8}$", h.ident(t.Name))
	if err != nil {
		return nil, err
	}
	var out []Partition
	for rows.Next() {
		var name string
		var attached bool
		if err := rows.Scan(&name, &attached); err != nil {
			rows.Close()
			return nil, err
		}
		if start, ok := partitionStart(t, name); ok {
			out = append(out, Partition{Name: name, From: start, To: t.Width.Next(start), Attached: attached})
		}
	}
	return out, rows.Err()
}

// EnsurePartitions creates the partitions from the one containing now to
// the one containing now+Headroom, skipping those that exist, and returns
// the ones it created. Each partition is created in its own transaction;
// on an error, such as a deferral (ErrDeferred), the ones before it stay.
func (h *Tier) EnsurePartitions(ctx context.Context, t *series.Table, now time.Time) ([]Partition, error) {
	return h.CreatePartitions(ctx, t, now, now.Add(t.Headroom))
}

// CreatePartitions creates the partitions whose ranges meet [from, to],
// skipping those that exist, and returns the ones it created. A partition
// that exists detached, or that starts below the partition floor (see
// Fence), is an error wrapping ErrBelowFloor for the latter: its window
// was archived or is being archived, and attaching a new one would put
// rows below the watermark.
//
// It never takes ACCESS EXCLUSIVE on the parent, as CREATE TABLE ...
// PARTITION OF would. A partition is built as a standalone table, with a
// CHECK on its bound and the primary key and exclusion constraints, while no
// other session can see it; ATTACH PARTITION then needs only SHARE UPDATE
// EXCLUSIVE on the parent, which conflicts with no read and no write, and
// proves the partition constraint from the CHECK instead of scanning. The
// CHECK is dropped again, so no row is checked twice.
func (h *Tier) CreatePartitions(ctx context.Context, t *series.Table, from, to time.Time) ([]Partition, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if to.Before(from) {
		return nil, &series.Error{Kind: series.InvalidInput, Op: "create partition", Table: t.Name, Err: fmt.Errorf("range ends at %v before it starts at %v", to, from)}
	}
	var created []Partition
	for start := t.Width.Start(from); !start.After(to); start = t.Width.Next(start) {
		p := Partition{Name: partitionName(t, start), From: start, To: t.Width.Next(start), Attached: true}
		ok, err := h.createPartition(ctx, t, p)
		if err != nil {
			return created, err
		}
		if ok {
			created = append(created, p)
		}
	}
	return created, nil
}

// sqlTime returns t as a timestamptz literal.
func sqlTime(t time.Time) string {
	return "'" + t.UTC().Format("2006-01-02 15:04:05.999999") + "+00'"
}

func (h *Tier) createPartition(ctx context.Context, t *series.Table, p Partition) (bool, error) {
	const op = "create partition"
	created := false
	err := h.ddl(ctx, op, t.Name, func(tx pgx.Tx) (err error) {
		created, err = h.createPartitionTx(ctx, tx, t, p)
		return err
	})
	if created && err == nil {
		h.log.Info("hot: partition created", "table", t.Name, "partition", p.Name, "from", p.From, "to", p.To)
	}
	return created && err == nil, err
}

// createPartitionTx creates and attaches partition p in tx, unless it is
// attached already.
func (h *Tier) createPartitionTx(ctx context.Context, tx pgx.Tx, t *series.Table, p Partition) (bool, error) {
	attached, exists, err := h.partitionState(ctx, tx, t, p.Name)
	switch {
	case err != nil:
		return false, err
	case attached:
		return false, nil
	case exists:
		return false, &series.Error{Kind: series.InvalidInput, Op: "create partition", Table: t.Name, Err: fmt.Errorf("partition %s exists detached: its window was archived", p.Name)}
	}
	// Read after partitionState took the DDL lock: a fence that committed
	// before is seen, and none can commit until this transaction ends.
	if err := h.checkFloor(ctx, tx, t, p); err != nil {
		return false, err
	}
	integrity, err := h.integrityOf(ctx, tx, t)
	if err != nil {
		return false, err
	}
	lay, err := h.layoutOf(ctx, tx, t)
	if err != nil {
		return false, err
	}
	part, parent := h.ident(p.Name), h.ident(t.Name)
	col, lo, hi := lay.fromColumn(), lay.fromLit(t, p.From), lay.fromLit(t, p.To)
	bound := col + ` >= ` + lo + ` AND ` + col + ` < ` + hi
	stmts := []string{
		`CREATE TABLE ` + part + ` (LIKE ` + parent + ` INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`,
		`ALTER TABLE ` + part + ` ADD CONSTRAINT ` + quote(p.Name+"_bound") + ` CHECK (` + bound + `)`,
		`ALTER TABLE ` + part + ` ADD CONSTRAINT ` + quote(p.Name+"_pkey") + ` PRIMARY KEY (` + lay.primaryKey(t) + `)`,
	}
	// The statement triggers also while an upgrade to IntegrityStatement
	// runs (upgrade.go), whatever this process's declaration says: they
	// record the spans of its rows, which the backfill does not.
	records := integrity == series.IntegrityStatement
	if !records {
		if records, err = h.recordsSpans(ctx, tx, t); err != nil {
			return false, err
		}
	}
	if integrity == series.IntegrityExclusion {
		for _, c := range exclusions(t, p.Name) {
			stmts = append(stmts, `ALTER TABLE `+part+` ADD `+c)
		}
	}
	if records {
		stmts = append(stmts, h.triggerDDL(t, part, p.Name)...)
	}
	stmts = append(stmts,
		`ALTER TABLE `+parent+` ATTACH PARTITION `+part+` FOR VALUES FROM (`+lo+`) TO (`+hi+`)`,
		`ALTER TABLE `+part+` DROP CONSTRAINT `+quote(p.Name+"_bound"),
	)
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return false, err
		}
	}
	return true, nil
}

// exclusions returns the exclusion constraints of a partition, enforced by
// GiST with btree_gist. malo_id, obis_code and version are compared as
// bigint, which the CHECKs on them make equivalent (see obisKey) and GiST
// handles much faster: each text column of the index costs an insert about
// as much as the primary key does.
func exclusions(t *series.Table, part string) []string {
	series := `(malo_id::bigint) WITH =, (` + obisKey("obis_code") + `) WITH =`
	for _, c := range t.Identity() {
		series += `, ` + quote(c.Name) + ` WITH =`
	}
	var out []string
	// No two intervals of a series overlap within one version. With one
	// resolution the grid CHECK and the primary key see to that already
	// (see gridCheck), and the costliest constraint is left out.
	if len(t.AcceptedResolutions()) > 1 {
		out = append(out, `CONSTRAINT `+quote(part+"_overlap")+` EXCLUDE USING gist (`+series+
			`, ((version - `+versionBias+`)::bigint) WITH =, tstzrange("from", "to") WITH &&)`)
	}
	// All versions of a reading come from one network operator.
	out = append(out, `CONSTRAINT `+quote(part+"_operator")+` EXCLUDE USING gist (`+series+
		`, "from" WITH =, (split_part(version_scope, ':', 1)) WITH <>)`)
	return out
}

// obisKey returns an expression that maps an OBIS code in the form the
// obis_code CHECK admits, A-B:C.D.E with an optional *F, each group 0 to
// 999 without leading zeros, one to one onto a bigint: ten bits a group,
// and bit 60 for the presence of F. The CHECK runs before the index sees a
// row, so every cast succeeds. It is written out rather than wrapped in a
// function, so that a partition needs nothing but its own DDL.
func obisKey(col string) string {
	return `(split_part(` + col + `, '-', 1)::int8 << 50)` +
		` | (split_part(split_part(` + col + `, ':', 1), '-', 2)::int8 << 40)` +
		` | (split_part(split_part(` + col + `, ':', 2), '.', 1)::int8 << 30)` +
		` | (split_part(` + col + `, '.', 2)::int8 << 20)` +
		` | (split_part(split_part(` + col + `, '.', 3), '*', 1)::int8 << 10)` +
		` | coalesce(nullif(split_part(` + col + `, '*', 2), '')::int8 | (1::int8 << 60), 0)`
}

// partitionState reports whether a partition of t exists and is attached.
func (h *Tier) partitionState(ctx context.Context, tx pgx.Tx, t *series.Table, name string) (attached, exists bool, err error) {
	if err := h.lockDDL(ctx, tx, t); err != nil {
		return false, false, err
	}
	err = tx.QueryRow(ctx, `
SELECT to_regclass($1) IS NOT NULL,
	EXISTS (SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass($1) AND inhparent = to_regclass($2))`,
		h.ident(name), h.ident(t.Name)).Scan(&exists, &attached)
	return attached, exists, err
}

// Detach detaches the partition starting at start, for archival. It needs
// ACCESS EXCLUSIVE on the parent, so it waits at most the DDL lock timeout
// and otherwise gives up having changed nothing (ErrDeferred). Detaching a
// partition that is detached already does nothing, so an interrupted
// archival can resume.
//
// Either way the partition is then refused, with an Unavailable error
// wrapping ErrUndeclaredValues and nothing changed, if it holds a value in
// a column t does not declare (a column another process's declaration
// added): the archival would not carry the value over. Once detached no
// writer reaches the partition, so the check sees every row the archival
// will read.
func (h *Tier) Detach(ctx context.Context, t *series.Table, start time.Time) error {
	const op = "detach partition"
	if err := t.Validate(); err != nil {
		return err
	}
	name, err := h.partitionAt(t, op, start)
	if err != nil {
		return err
	}
	detached := false
	err = h.ddl(ctx, op, t.Name, func(tx pgx.Tx) error {
		attached, exists, err := h.partitionState(ctx, tx, t, name)
		switch {
		case err != nil:
			return err
		case !exists:
			return &series.Error{Kind: series.InvalidInput, Op: op, Table: t.Name, Err: fmt.Errorf("no partition %s", name)}
		case attached:
			if _, err := tx.Exec(ctx, `ALTER TABLE `+h.ident(t.Name)+` DETACH PARTITION `+h.ident(name)); err != nil {
				return err
			}
		}
		if err := h.checkDeclared(ctx, tx, t, name); err != nil {
			return err
		}
		detached = attached
		return nil
	})
	if detached && err == nil {
		h.log.Info("hot: partition detached", "table", t.Name, "partition", name)
	}
	return err
}

// Drop drops the detached partition starting at start, destroying its rows.
// The caller must know they are durable in the cold tier. An attached
// partition is refused; a missing one is no error, so a reclamation can be
// repeated. Like every DDL it waits at most the DDL lock timeout.
func (h *Tier) Drop(ctx context.Context, t *series.Table, start time.Time) error {
	const op = "drop partition"
	if err := t.Validate(); err != nil {
		return err
	}
	name, err := h.partitionAt(t, op, start)
	if err != nil {
		return err
	}
	dropped := false
	err = h.ddl(ctx, op, t.Name, func(tx pgx.Tx) error {
		attached, exists, err := h.partitionState(ctx, tx, t, name)
		switch {
		case err != nil:
			return err
		case attached:
			return &series.Error{Kind: series.InvalidInput, Op: op, Table: t.Name, Err: fmt.Errorf("partition %s is attached: detach it first", name)}
		case !exists:
			return nil
		}
		if _, err := tx.Exec(ctx, `DROP TABLE `+h.ident(name)); err != nil {
			return err
		}
		// The spans of a table of IntegrityStatement, or of one being
		// upgraded to it.
		switch records, err := h.recordsSpans(ctx, tx, t); {
		case err != nil:
			return err
		case records:
			if err := h.forgetOwners(ctx, tx, t, start, t.Width.Next(start)); err != nil {
				return err
			}
		}
		lay, err := h.layoutOf(ctx, tx, t)
		if err != nil {
			return err
		}
		if err := lay.forgetPartition(ctx, h, tx, t, start, t.Width.Next(start)); err != nil {
			return err
		}
		dropped = true
		return nil
	})
	if dropped && err == nil {
		h.log.Info("hot: partition dropped", "table", t.Name, "partition", name)
	}
	return err
}

// partitionAt returns the name of the partition starting at start, which
// must be a partition boundary.
func (h *Tier) partitionAt(t *series.Table, op string, start time.Time) (string, error) {
	if !t.Width.Start(start).Equal(start) {
		return "", &series.Error{Kind: series.InvalidInput, Op: op, Table: t.Name, Err: fmt.Errorf("%v is not the start of a %s partition", start, t.Width)}
	}
	return partitionName(t, start), nil
}

// partitionName returns the name of t's partition starting at start.
func partitionName(t *series.Table, start time.Time) string {
	return t.Name + "_p" + start.UTC().Format("20060102")
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
