package privacy

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// MinSubjectKeyLen is the shortest Options.SubjectKey Open accepts, in
// bytes: the key of HMAC-SHA256 should be as long as its output.
const MinSubjectKeyLen = 32

// Domain separators, so that no two uses of the key or of SHA-256 in the
// package can produce the same value.
const (
	subjectDomain     = "meterstore.privacy.subject\x00"
	fingerprintDomain = "meterstore.privacy.subject-key-fingerprint"
	lockDomain        = "meterstore.privacy.subject-lock\x00"
)

// subjectHash returns the keyed hash that stands for naturalID in the
// suppression list and the erasure log. Natural ids such as customer
// numbers are few enough to enumerate, so an unkeyed hash would reveal
// which ones were erased; under a secret key the hash reveals nothing to
// whoever reads the tables without it. r.key must not be nil.
func (r *Registry) subjectHash(naturalID string) []byte {
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte(subjectDomain + naturalID))
	return m.Sum(nil)
}

// keyFingerprint returns the value subject_key records for r.key: it
// identifies the key without revealing it.
func (r *Registry) keyFingerprint() []byte {
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte(fingerprintDomain))
	return m.Sum(nil)
}

// lockSubject takes the transaction-scoped advisory lock of naturalID,
// which serializes Register's check of the suppression list and its insert
// with Erase's delete and suppression of the same subject: without it, a
// registration that checked the list before an erasure committed could
// insert a mapping row after the erasure's DELETE had looked, and the
// erased subject would be linked again. The lock key is unkeyed, so that a
// registry without the subject key serializes with one that has it; it is
// held only for the transaction and stored nowhere.
func (r *Registry) lockSubject(ctx context.Context, tx pgx.Tx, naturalID string) error {
	if r.skipSubjectLock {
		return nil
	}
	sum := sha256.Sum256([]byte(lockDomain + r.schema + "\x00" + naturalID))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(binary.BigEndian.Uint64(sum[:8]))); err != nil {
		return fmt.Errorf("lock subject: %w", err)
	}
	return nil
}

// queryRower is a pool or a transaction.
type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// checkKey returns an ErrSubjectKeyMismatch error if subject_key records a
// key other than r.key; none recorded is no mismatch.
func (r *Registry) checkKey(ctx context.Context, q queryRower) error {
	var stored []byte
	err := q.QueryRow(ctx, `SELECT fingerprint FROM `+r.keyRow).Scan(&stored)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("read subject key fingerprint: %w", err)
	case !hmac.Equal(stored, r.keyFingerprint()):
		return ErrSubjectKeyMismatch
	}
	return nil
}

// claimKey records r.key's fingerprint in tx if none is recorded, and
// then checks it like checkKey. The first erasure fixes the key: until
// then a deployment may change it freely.
func (r *Registry) claimKey(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `INSERT INTO `+r.keyRow+` (fingerprint) VALUES ($1) ON CONFLICT DO NOTHING`,
		r.keyFingerprint()); err != nil {
		return fmt.Errorf("record subject key fingerprint: %w", err)
	}
	return r.checkKey(ctx, tx)
}
