package privacy

import (
	"context"
	"encoding/hex"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

// Actions recorded in erasure_log.
const (
	actionErase      = "erase"
	actionUnsuppress = "unsuppress"
)

// Erase carries out an erasure request: it deletes every mapping row of
// the subject naturalID, puts the subject on the suppression list, and
// records the erasure in erasure_log, in one transaction; it returns how
// many mapping rows it deleted. The readings stay and are anonymous from
// the commit on, in both tiers, since their references now resolve to
// nothing; no reading is read or rewritten. From the commit on, Register
// refuses the subject (ErrSuppressed) until Unsuppress lifts it.
//
// The audit row holds the instant of the transaction (the server's clock:
// the erasure decides nothing by time, so it takes no now), legalBasis
// (the legal basis and the request's reference, such as "Art. 17 DSGVO,
// request 2026-0142"), actor, the count, and the subject as its keyed
// hash, never its natural id. Erasing an unknown subject deletes nothing,
// is not an error, and is audited and suppressed all the same: the request
// covers values not yet delivered. A repeated erasure is safe and adds an
// audit row that removed nothing.
//
// Erase refuses, as InvalidInput, a malformed natural id and an empty
// legal basis or actor, and, as InvalidConfig, a registry without a
// subject key (ErrNoSubjectKey) or with a key other than the list's
// (ErrSubjectKeyMismatch). The first erasure records which key the list is
// written with.
func (r *Registry) Erase(ctx context.Context, naturalID, legalBasis, actor string) (removed int64, err error) {
	const op = "erase"
	if err := r.prepare(ctx, op); err != nil {
		return 0, err
	}
	if err := checkRequest(naturalID, legalBasis, actor); err != nil {
		return 0, &series.Error{Kind: series.InvalidInput, Op: opName(op), Err: err}
	}
	if r.key == nil {
		return 0, classify(op, ErrNoSubjectKey)
	}
	hash := r.subjectHash(naturalID)
	var id int64
	err = pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		if err := r.lockSubject(ctx, tx, naturalID); err != nil {
			return err
		}
		if err := r.claimKey(ctx, tx); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM `+r.subjects+` WHERE natural_id = $1`, naturalID)
		if err != nil {
			return fmt.Errorf("delete references: %w", err)
		}
		removed = tag.RowsAffected()
		if _, err := tx.Exec(ctx, `INSERT INTO `+r.suppressed+` (subject_hash) VALUES ($1)
			ON CONFLICT (subject_hash) DO NOTHING`, hash); err != nil {
			return fmt.Errorf("suppress subject: %w", err)
		}
		id, err = r.record(ctx, tx, actionErase, hash, legalBasis, actor, removed)
		return err
	})
	if err != nil {
		return 0, classify(op, err)
	}
	r.log.Info("privacy: subject erased", "schema", r.schema, "erasure", id, "subject", hex.EncodeToString(hash),
		"legal_basis", legalBasis, "actor", actor, "references", removed)
	return removed, nil
}

// Unsuppress lifts the suppression of the subject naturalID, so that
// Register issues it references again: for a subject who returns and
// consents, or an erasure made in error (the erased links stay destroyed).
// It records the decision in erasure_log with its own row, action
// "unsuppress", legalBasis, actor and removed 1, or 0 if the subject was
// not suppressed, which is not an error; it reports whether it lifted a
// suppression. It refuses what Erase refuses.
//
// Unsuppress is the only way to lift a suppression that leaves an audit
// row; deleting the row from suppressed_subjects by hand leaves none. It
// needs the natural id: the list alone cannot say whom a row stands for.
func (r *Registry) Unsuppress(ctx context.Context, naturalID, legalBasis, actor string) (lifted bool, err error) {
	const op = "unsuppress"
	if err := r.prepare(ctx, op); err != nil {
		return false, err
	}
	if err := checkRequest(naturalID, legalBasis, actor); err != nil {
		return false, &series.Error{Kind: series.InvalidInput, Op: opName(op), Err: err}
	}
	if r.key == nil {
		return false, classify(op, ErrNoSubjectKey)
	}
	hash := r.subjectHash(naturalID)
	var id int64
	err = pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		if err := r.lockSubject(ctx, tx, naturalID); err != nil {
			return err
		}
		if err := r.checkKey(ctx, tx); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM `+r.suppressed+` WHERE subject_hash = $1`, hash)
		if err != nil {
			return fmt.Errorf("lift suppression: %w", err)
		}
		lifted = tag.RowsAffected() > 0
		id, err = r.record(ctx, tx, actionUnsuppress, hash, legalBasis, actor, tag.RowsAffected())
		return err
	})
	if err != nil {
		return false, classify(op, err)
	}
	r.log.Info("privacy: suppression lifted", "schema", r.schema, "erasure", id, "subject", hex.EncodeToString(hash),
		"legal_basis", legalBasis, "actor", actor, "lifted", lifted)
	return lifted, nil
}

// record writes a row of erasure_log in tx and returns its id.
func (r *Registry) record(ctx context.Context, tx pgx.Tx, action string, hash []byte, legalBasis, actor string, removed int64) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO `+r.erasures+` (action, subject_hash, legal_basis, actor, removed)
		VALUES ($1, $2, $3, $4, $5) RETURNING id`, action, hash, legalBasis, actor, removed).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("record %s: %w", action, err)
	}
	return id, nil
}

// checkRequest reports what is wrong with the arguments of an erasure or
// a lifted suppression, if anything.
func checkRequest(naturalID, legalBasis, actor string) error {
	if err := checkNaturalID(naturalID); err != nil {
		return err
	}
	if err := checkAuditText("legal basis", legalBasis); err != nil {
		return err
	}
	return checkAuditText("actor", actor)
}
