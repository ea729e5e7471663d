package hot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// The aggregate of days.
//
// Summing a partition's days at read time resolves every version of
// every reading (days.go); a table in a dictionary layout keeps the sums
// instead, in <table>_days: per partition (bucket, its start), series
// id, balancing day, sparte, resolution and unit, the columns of
// dayStored. It stays exact for any snapshot by a dirty log,
// <table>_days_dirty: the statement check (dictCheckBody), which fires
// for every client, appends the series and bucket of the new rows in
// the writer's transaction. A read takes, in its snapshot, the stored
// sums of the series and partitions that no dirty row names and sums
// the others from their readings; refreshDays folds the dirty log into
// the sums, one statement (one snapshot) per partition: the dirty rows
// it deletes are those whose readings it sums, and a writer committing
// meanwhile leaves dirty rows it did not see. The log has no unique key
// on purpose: a writer must never skip its row because one it cannot
// see yet is about to be deleted.

// daysName returns the name of t's aggregate of days.
func daysName(t *series.Table) string { return t.Name + "_days" }

// dirtyName returns the name of the dirty log of t's aggregate of days.
func dirtyName(t *series.Table) string { return t.Name + "_days_dirty" }

// sumsDays reports whether layout l keeps an aggregate of days.
func sumsDays(l layout) bool { return l != layoutRows }

// daysDDL returns the CREATE TABLE statements of t's aggregate of days,
// its dirty log and its tokens (daytokens.go).
func (h *Tier) daysDDL(t *series.Table) []string {
	cols := []string{"bucket timestamptz NOT NULL", "series int4 NOT NULL", "balancing_day date NOT NULL", "sparte text NOT NULL",
		"resolution text NOT NULL", "unit text NOT NULL", "present int8 NOT NULL", "on_grid int8 NOT NULL", "value_sum numeric NOT NULL"}
	for _, q := range metering.Qualities() {
		cols = append(cols, quote(dayQualityColumn(q))+" int8 NOT NULL")
	}
	cols = append(cols, "max_version numeric NOT NULL", "max_recorded_at timestamptz NOT NULL",
		`CONSTRAINT `+quote(daysName(t)+"_pkey")+` PRIMARY KEY (bucket, series, balancing_day, sparte, resolution, unit)`)
	days, dirty := h.ident(daysName(t)), h.ident(dirtyName(t))
	return append([]string{
		`CREATE TABLE ` + days + ` (` + strings.Join(cols, ", ") + `)`,
		`COMMENT ON TABLE ` + days + ` IS 'MeterStore: the day sums of the resolved readings of ` + t.Name + ` per partition and series, but those ` + dirtyName(t) + ` names'`,
		`CREATE TABLE ` + dirty + ` (series int4 NOT NULL, bucket timestamptz NOT NULL)`,
		// Reads and refreshes look a partition's rows up: the log holds
		// those of partitions detached and not yet dropped too.
		`CREATE INDEX ` + quote(dirtyName(t)+"_bucket") + ` ON ` + dirty + ` (bucket, series)`,
		`COMMENT ON TABLE ` + dirty + ` IS 'MeterStore: the series and partitions of ` + t.Name + ` written since their day sums in ` + daysName(t) + `'`,
	}, h.dayTokensDDL(t)...)
}

// dirtyAppend returns the statement of the check body that appends the
// distinct series and buckets of arrays ss and bs to t's dirty log.
func dirtyAppend(h *Tier, t *series.Table, ss, bs string) string {
	return `
	INSERT INTO ` + h.ident(dirtyName(t)) + ` (series, bucket) SELECT DISTINCT s, b FROM unnest(` + ss + `, ` + bs + `) AS x(s, b);`
}

// ensureDays gives t, a table of IntegrityStatement in layout l declared
// by a version without the aggregate of days, its aggregate, in tx before
// its check body is replaced: every series and bucket is marked dirty, so
// that the first refresh fills it. The SHARE lock keeps writers, whose
// old check marks nothing, out until tx commits; if tx fails, nothing is
// left and the next ensure does it again.
func (h *Tier) ensureDays(ctx context.Context, tx pgx.Tx, t *series.Table, l layout) error {
	if !sumsDays(l) {
		return nil
	}
	var have bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, h.ident(dirtyName(t))).Scan(&have); err != nil || have {
		return err
	}
	stmts := append([]string{`LOCK TABLE ` + h.ident(t.Name) + ` IN SHARE MODE`}, h.daysDDL(t)...)
	stmts = append(stmts, `INSERT INTO `+h.ident(dirtyName(t))+` (series, bucket) SELECT DISTINCT series, `+
		bucketExpr(t, l.fromTime(t, "r."+l.fromColumn()))+` FROM `+h.ident(t.Name)+` r`)
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("create the aggregate of days: %w", err)
		}
	}
	h.log.Info("hot: aggregate of days created", "table", t.Name)
	return nil
}

// forgetDays deletes the day sums and dirty rows of the dropped buckets
// [from, to) of t, in tx, if t has an aggregate of days.
func (h *Tier) forgetDays(ctx context.Context, tx pgx.Tx, t *series.Table, from, to time.Time) error {
	var have bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, h.ident(dirtyName(t))).Scan(&have); err != nil || !have {
		return err
	}
	for _, name := range []string{daysName(t), dirtyName(t)} {
		if _, err := tx.Exec(ctx, `DELETE FROM `+h.ident(name)+` WHERE bucket >= $1 AND bucket < $2`, from, to); err != nil {
			return fmt.Errorf("forget the day sums in %s: %w", name, err)
		}
	}
	return h.forgetDayTokens(ctx, tx, t, from, to)
}

// refreshDays folds the dirty rows of the partitions parts of t into its
// aggregate of days, one statement per partition, after the previous
// refresh of t committed: one still running (holding the advisory lock)
// makes this one do nothing, as a read is exact either way. Serial
// refreshes keep an older snapshot's sums from overwriting a newer's.
// folded says it deleted dirty rows, which the log keeps as dead tuples
// until a vacuum (see vacuumSoon).
func (h *Tier) refreshDays(ctx context.Context, t *series.Table, l layout, parts []Partition) (folded bool, err error) {
	// Most reads find the log empty: one round trip, no transaction.
	var dirty bool
	if err := h.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+h.ident(dirtyName(t))+`)`).Scan(&dirty); err != nil || !dirty {
		return false, err
	}
	tx, err := h.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() {
		if err != nil {
			tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	var mine bool
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0))`, "meterstore days "+h.ident(daysName(t))).Scan(&mine); err != nil {
		return false, err
	}
	if !mine {
		return false, tx.Rollback(ctx)
	}
	for _, p := range parts {
		if _, err := tx.Exec(ctx, h.refreshSQL(t, l, p)); err != nil {
			return false, fmt.Errorf("refresh the day sums of %s: %w", p.Name, err)
		}
	}
	return true, tx.Commit(ctx)
}

// vacuumSoon vacuums the dirty log rel in the background, unless a
// vacuum of it is under way. A refresh deletes the rows it folds, and
// until they are vacuumed every read's probes of the log (an EXISTS a
// partition, days.go) walk them: on a fleet's week of hot partitions,
// 282,573 dead rows made the probes of a read of daily take 60 to 66 ms
// instead of a fraction of one (measured), and autovacuum comes up to a
// minute later. It runs once the read that refreshed has ended, whose
// snapshot would keep the deleted rows visible to it.
func (h *Tier) vacuumSoon(rel string) {
	if _, busy := h.vacuums.LoadOrStore(rel, true); busy {
		return
	}
	go func() {
		defer h.vacuums.Delete(rel)
		ctx, cancel := context.WithTimeout(context.Background(), vacuumTimeout)
		defer cancel()
		if _, err := h.pool.Exec(ctx, `VACUUM `+rel); err != nil {
			h.log.Warn("hot: dirty log not vacuumed", "relation", rel, "err", err)
		}
	}()
}

// vacuumTimeout bounds a vacuum of a dirty log: it holds one of the
// pool's connections.
const vacuumTimeout = time.Minute

// refreshSQL returns the statement that folds the dirty rows of
// partition p of t into its aggregate of days: it deletes them, sums the
// readings of their series in p, replaces the sums of those series and
// deletes those that no longer have readings.
func (h *Tier) refreshSQL(t *series.Table, l layout, p Partition) string {
	days, dirty := h.ident(daysName(t)), h.ident(dirtyName(t))
	cols := dayStored()
	key := []string{"series", "balancing_day", "sparte", "resolution", "unit"}
	on := make([]string, len(key))
	for i, k := range key {
		on[i] = "s." + k + " = a." + k
	}
	set := make([]string, 0, len(cols)-len(key))
	for _, c := range cols[len(key):] {
		set = append(set, c+" = EXCLUDED."+c)
	}
	sums := l.daySums(h, t, h.ident(p.Name), []string{`series = ANY (ARRAY(SELECT DISTINCT series FROM d))`})
	return `WITH d AS (DELETE FROM ` + dirty + ` WHERE ` + bucketIn("", p) + ` RETURNING series),
	s AS MATERIALIZED (` + sums + `),
	gone AS (DELETE FROM ` + days + ` a WHERE ` + bucketIn("a.", p) + ` AND a.series IN (SELECT series FROM d)
		AND NOT EXISTS (SELECT 1 FROM s WHERE ` + strings.Join(on, " AND ") + `))
	INSERT INTO ` + days + ` (bucket, ` + strings.Join(cols, ", ") + `)
	SELECT ` + timeLit(p.From) + `, ` + strings.Join(each("s.", cols), ", ") + ` FROM s
	ON CONFLICT (bucket, ` + strings.Join(key, ", ") + `) DO UPDATE SET ` + strings.Join(set, ", ")
}

// bucketIn returns the condition that column bucket of alias r (with its
// dot, or "") lies in partition p.
func bucketIn(r string, p Partition) string {
	c := r + `bucket >= ` + timeLit(p.From)
	if !p.To.IsZero() {
		c += ` AND ` + r + `bucket < ` + timeLit(p.To)
	}
	return c
}

// storedDaySums returns the SELECT of the day sums by series id of
// partition p of t (rel) in a read's snapshot: the stored ones of the
// series no dirty row names, and those summed from the readings (of the
// rows where selects) of the others. keys are conditions on the column
// series.
func (h *Tier) storedDaySums(t *series.Table, l layout, rel string, p Partition, keys []string) string {
	days, dirty := h.ident(daysName(t)), h.ident(dirtyName(t))
	fresh := l.daySums(h, t, rel, append(keys, `series = ANY (ARRAY(SELECT DISTINCT series FROM `+dirty+` WHERE `+bucketIn("", p)+`))`))
	// NOT IN, not NOT EXISTS: series is NOT NULL, so both say the same,
	// and NOT IN is a hashed subplan built once, where for NOT EXISTS the
	// planner, seeing the dirty log mostly empty, scans it once a row.
	cond := append([]string{bucketIn("d.", p), `d.series NOT IN (SELECT x.series FROM ` + dirty + ` x WHERE ` + bucketIn("x.", p) + `)`}, keys...)
	return fresh + ` UNION ALL SELECT ` + strings.Join(each("d.", dayStored()), ", ") + ` FROM ` + days + ` d WHERE ` + strings.Join(cond, " AND ")
}
