package archive

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// A reader that answers from a cold plan and a PostgreSQL statement can
// read the ledger's watermark in that statement instead of in a round trip
// of its own before the plan, as VetWatermark does. Read after the plan,
// the ledger may hold a commit that landed in between, so such a reading
// can only vouch for the plan's W, never condemn it: the ledger's record
// only moves forward, so a record read after W and not above it was not
// above it before W was read either, and VetWatermark would have passed
// W. Where it does not vouch, the reader asks VetWatermark.

// LedgerExists reports whether the ledger's record of watermarks exists.
// Where it does not, no table has a record, and VetWatermark passes every
// watermark read after this answer.
func (a *Archiver) LedgerExists(ctx context.Context) (bool, error) {
	return a.LedgerExistsOn(ctx, a.ledger.pool)
}

// A RowQuerier runs a statement of one row: a pool, a connection or a
// transaction on the ledger's database.
type RowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// LedgerExistsOn is LedgerExists asked through db, so that a reader with
// connections of its own does not wait for one of the archiver's.
func (a *Archiver) LedgerExistsOn(ctx context.Context, db RowQuerier) (bool, error) {
	var ok bool
	if err := db.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, a.ledger.wmIdent()).Scan(&ok); err != nil {
		return false, ledgerFailed("", err)
	}
	return ok, nil
}

// LedgerWatermark returns a scalar subquery, for a statement of the
// caller's, of the highest watermark of table the ledger recorded, NULL
// if none; arg binds a parameter and returns its placeholder. The ledger
// must exist (LedgerExists).
func (a *Archiver) LedgerWatermark(table string, arg func(any) string) string {
	return `(SELECT watermark FROM ` + a.ledger.wmIdent() + ` WHERE table_name = ` + arg(table) + `)`
}

// LedgerProbe returns a scalar subquery, for a statement of the caller's,
// that is NULL where the ledger does not exist and a timestamp of no
// meaning where it does; arg binds a parameter and returns its
// placeholder. Nothing drops the ledger once an archival has created it,
// so an absent ledger read after W was absent when W was read: no table
// had a record, and VetWatermark would have passed W, as it passes every
// watermark read after LedgerExists says false.
func (a *Archiver) LedgerProbe(arg func(any) string) string {
	return `(SELECT CASE WHEN to_regclass(` + arg(a.ledger.wmIdent()) + `::text) IS NULL THEN NULL ELSE now() END)`
}

// Vouches reports whether lw, the ledger's watermark of a table (lok
// false: none), read after w (hasW false: none) was read from the
// catalog, vouches for w: VetWatermark would have passed it. False
// decides nothing.
func Vouches(w time.Time, hasW bool, lw time.Time, lok bool) bool {
	return !lok || hasW && !w.Before(lw)
}
