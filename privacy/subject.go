package privacy

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

// ReferencePrefix begins every reference the registry issues.
const ReferencePrefix = "s_"

// MaxNaturalIDLen is the longest natural id, in bytes, the registry accepts.
const MaxNaturalIDLen = 1024

// newReference returns a fresh reference: the prefix and 128 random bits in
// lowercase base32, 28 characters in all. It is drawn, not derived, so
// nothing about the natural id can be recovered from it once the mapping
// row is gone.
func newReference() string {
	var b [16]byte
	rand.Read(b[:]) // never fails; see crypto/rand.Read
	enc := base32.StdEncoding.WithPadding(base32.NoPadding)
	return ReferencePrefix + strings.ToLower(enc.EncodeToString(b[:]))
}

// Register returns the reference for the subject naturalID's values
// collected at collectedAt: the existing one if the subject already has a
// reference for the Berlin calendar year of collectedAt, a new random one
// otherwise. Registering a redelivered value therefore returns the
// reference it got the first time, and each collection year has its own
// reference, so a year's link can be destroyed without touching the next.
//
// The registry keeps the earliest instant registered for a (subject,
// collection year), truncated to the microsecond: a Rolling retention
// counts from it, so a link never outlives any value it covers by more than
// the retention.
//
// Register refuses a subject that Erase put on the suppression list with
// an IntegrityViolation whose cause is ErrSuppressed (errors.Is), so that
// a delivery after an erasure cannot link the subject again; the caller
// decides what becomes of the values (kept without a subject, or refused)
// until an operator lifts the suppression with Unsuppress. A registry
// without a subject key cannot read the list: while the list is empty it
// registers as usual, and once it is not, it refuses to issue a new
// reference (ErrNoSubjectKey). A subject-year already registered is
// returned without consulting the list, since Erase leaves no row of a
// suppressed subject; one returned just before an erasure commits resolves
// to nothing afterwards, like every erased reference.
//
// A natural id is compared byte for byte; it must be non-empty, at most
// MaxNaturalIDLen bytes of UTF-8 without control characters, and must not
// begin or end with white space.
func (r *Registry) Register(ctx context.Context, naturalID string, collectedAt time.Time) (string, error) {
	const op = "register"
	if err := r.prepare(ctx, op); err != nil {
		return "", err
	}
	if err := checkNaturalID(naturalID); err != nil {
		return "", &series.Error{Kind: series.InvalidInput, Op: opName(op), Err: err}
	}
	if collectedAt.IsZero() {
		return "", invalid(op, "zero collection instant")
	}
	collectedAt = collectedAt.Truncate(time.Microsecond)
	year := r.cal.LocalDay(collectedAt).Year

	// Most calls find the reference; only a new subject-year, or a value
	// collected before every one registered so far, writes.
	var ref string
	var first time.Time
	err := r.pool.QueryRow(ctx, `SELECT reference, collected_at FROM `+r.subjects+`
		WHERE natural_id = $1 AND collection_year = $2`, naturalID, year).Scan(&ref, &first)
	switch {
	case err == nil && !first.After(collectedAt):
		return ref, nil
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		return "", classify(op, fmt.Errorf("look up reference: %w", err))
	}
	ref, err = r.insert(ctx, naturalID, year, collectedAt)
	if err != nil {
		return "", classify(op, err)
	}
	return ref, nil
}

// insert writes the mapping row of a subject-year, or moves its earliest
// collection instant back, and returns its reference, unless the subject
// is suppressed (ErrSuppressed), the key is not the list's
// (ErrSubjectKeyMismatch) or there is no key and the list is not empty
// (ErrNoSubjectKey).
//
// It holds the subject's lock (see lockSubject) across one statement that
// checks the list and inserts, so that the check sees every erasure that
// committed before it and no erasure commits between the check and the
// insert.
func (r *Registry) insert(ctx context.Context, naturalID string, year int, collectedAt time.Time) (string, error) {
	var hash, fingerprint []byte // NULL without a key
	if r.key != nil {
		hash, fingerprint = r.subjectHash(naturalID), r.keyFingerprint()
	}
	var ref *string
	var mismatch bool
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		if err := r.lockSubject(ctx, tx, naturalID); err != nil {
			return err
		}
		// A concurrent registration of the same subject-year waits for
		// this one's unique index entry and then updates the row it
		// inserted, so both return the same reference.
		return tx.QueryRow(ctx, `WITH c AS (
				SELECT EXISTS (SELECT 1 FROM `+r.suppressed+` WHERE subject_hash = $5) AS hit,
					EXISTS (SELECT 1 FROM `+r.suppressed+`) AS listed,
					coalesce((SELECT fingerprint <> $6 FROM `+r.keyRow+`), false) AS mismatch
			), ins AS (
				INSERT INTO `+r.subjects+` AS s (reference, natural_id, collection_year, collected_at)
				SELECT $1, $2, $3, $4 FROM c
				WHERE NOT $7 OR CASE WHEN $5::bytea IS NULL THEN NOT c.listed ELSE NOT (c.hit OR c.mismatch) END
				ON CONFLICT (natural_id, collection_year)
				DO UPDATE SET collected_at = least(s.collected_at, excluded.collected_at)
				RETURNING reference
			)
			SELECT (SELECT reference FROM ins), c.mismatch FROM c`,
			newReference(), naturalID, year, collectedAt, hash, fingerprint, !r.skipSuppression,
		).Scan(&ref, &mismatch)
	})
	switch {
	case err != nil:
		return "", fmt.Errorf("insert reference: %w", err)
	case ref != nil:
		return *ref, nil
	case hash == nil: // refused only for a list it cannot read
		return "", fmt.Errorf("suppression list is not empty: %w", ErrNoSubjectKey)
	case mismatch:
		return "", ErrSubjectKeyMismatch
	}
	return "", ErrSuppressed
}

// Resolve returns the natural id and collection year that ref stands for.
// ok is false if the registry does not know ref: it was never issued, or
// its subject was erased or swept, and the readings carrying it are
// anonymous.
func (r *Registry) Resolve(ctx context.Context, ref string) (naturalID string, year int, ok bool, err error) {
	if ref == "" {
		return "", 0, false, nil
	}
	if err := r.prepare(ctx, "resolve"); err != nil {
		return "", 0, false, err
	}
	err = r.pool.QueryRow(ctx, `SELECT natural_id, collection_year FROM `+r.subjects+`
		WHERE reference = $1`, ref).Scan(&naturalID, &year)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", 0, false, nil
	case err != nil:
		return "", 0, false, classify("resolve", err)
	}
	return naturalID, year, true, nil
}

// References returns the references of the subject naturalID, one per
// collection year, oldest year first; none if the subject is unknown.
func (r *Registry) References(ctx context.Context, naturalID string) ([]string, error) {
	const op = "references"
	if err := r.prepare(ctx, op); err != nil {
		return nil, err
	}
	if err := checkNaturalID(naturalID); err != nil {
		return nil, &series.Error{Kind: series.InvalidInput, Op: opName(op), Err: err}
	}
	rows, _ := r.pool.Query(ctx, `SELECT reference FROM `+r.subjects+`
		WHERE natural_id = $1 ORDER BY collection_year`, naturalID)
	refs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, classify(op, err)
	}
	return refs, nil
}

// checkNaturalID reports what is wrong with a natural id, if anything.
func checkNaturalID(id string) error {
	switch {
	case id == "":
		return errors.New("empty natural id")
	case len(id) > MaxNaturalIDLen:
		return fmt.Errorf("natural id of %d bytes, longer than %d", len(id), MaxNaturalIDLen)
	case !validText(id):
		return errors.New("natural id is not printable UTF-8")
	}
	first, _ := utf8.DecodeRuneInString(id)
	last, _ := utf8.DecodeLastRuneInString(id)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return errors.New("natural id begins or ends with white space")
	}
	return nil
}

// validText reports whether s is UTF-8 without control characters, which
// PostgreSQL text can hold and a log line or audit row can show.
func validText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	return strings.IndexFunc(s, unicode.IsControl) < 0
}
