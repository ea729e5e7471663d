package privacy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

// maxAuditText bounds the legal basis and the actor Sweep records.
const maxAuditText = 1024

// Sweep destroys every link that ret has brought due at now and records
// the sweep in the audit table, in one transaction; it returns the number
// of references removed. The readings carrying them stay, anonymous.
//
// The sweep is one DELETE on the registry through its index on
// collection_year (CalendarYears) or collected_at (Rolling). It reads no
// reading table, so its answer does not depend on which rows of which
// tables a session can see, and its cost does not grow with the readings.
// Every sweep writes an audit row, also one that removed nothing, as
// evidence that the duty was carried out: at is now, with legalBasis (such
// as "§ 60 Abs. 6 MsbG"), actor (such as "retention-job"), ret's String
// and the count.
//
// Sweep refuses, as InvalidInput, a zero now, an empty legal basis or
// actor, and a Retention that fails Validate. A sweep is safe to repeat:
// one whose commit was lost removes what is still due when retried.
func (r *Registry) Sweep(ctx context.Context, now time.Time, ret Retention, legalBasis, actor string) (removed int64, err error) {
	const op = "sweep"
	if err := r.prepare(ctx, op); err != nil {
		return 0, err
	}
	if now.IsZero() {
		return 0, invalid(op, "zero instant")
	}
	if err := ret.Validate(); err != nil {
		return 0, &series.Error{Kind: series.InvalidInput, Op: opName(op), Err: err}
	}
	if err := checkAuditText("legal basis", legalBasis); err != nil {
		return 0, &series.Error{Kind: series.InvalidInput, Op: opName(op), Err: err}
	}
	if err := checkAuditText("actor", actor); err != nil {
		return 0, &series.Error{Kind: series.InvalidInput, Op: opName(op), Err: err}
	}
	del, arg := r.sweepStatement(now, ret)
	err = pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, del, arg)
		if err != nil {
			return fmt.Errorf("delete due references: %w", err)
		}
		removed = tag.RowsAffected()
		_, err = tx.Exec(ctx, `INSERT INTO `+r.audit+` (at, legal_basis, actor, retention, removed)
			VALUES ($1, $2, $3, $4, $5)`, now, legalBasis, actor, ret.String(), removed)
		if err != nil {
			return fmt.Errorf("record sweep: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, classify(op, err)
	}
	r.log.Info("privacy: retention sweep", "schema", r.schema, "at", now, "retention", ret.String(),
		"legal_basis", legalBasis, "actor", actor, "removed", removed)
	return removed, nil
}

// sweepStatement returns the DELETE that removes what ret has brought due
// at now, and its one argument. ret must be valid.
func (r *Registry) sweepStatement(now time.Time, ret Retention) (string, any) {
	if ret.kind == retentionCalendarYears {
		return `DELETE FROM ` + r.subjects + ` WHERE collection_year <= $1`,
			int32(lastDueYear(r.cal.LocalDay(now), ret.years))
	}
	return `DELETE FROM ` + r.subjects + ` WHERE collected_at <= $1`, dueBefore(now, ret.period)
}

// checkAuditText reports what is wrong with the legal basis or actor of a
// sweep, if anything.
func checkAuditText(what, s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return fmt.Errorf("empty %s", what)
	case len(s) > maxAuditText:
		return fmt.Errorf("%s of %d bytes, longer than %d", what, len(s), maxAuditText)
	case !validText(s):
		return errors.New(what + " is not printable UTF-8")
	}
	return nil
}
