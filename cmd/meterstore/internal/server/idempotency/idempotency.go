// Package idempotency keeps the records of requests sent with an
// idempotency key: the final outcome of each, in the hot tier's database,
// so that a retry, to this process after a restart or to another process
// on the same database, is answered with it instead of being run again.
//
// A request claims its key with a lease, a time until which the record is
// its own; the request extends the lease while it runs and replaces it
// with the outcome when it ends. A lease rather than an advisory lock held
// on a connection: a lock would hold one of the pool's few connections per
// request in flight, which the request's own writes need too, so a few
// keyed requests at once could starve the pool. A process killed with its
// lease held leaves a pending record that another request takes over once
// the lease has passed.
package idempotency

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/meterstore/meterstore/internal/pgerr"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

// table holds the records, in the hot tier's schema.
const table = "idempotency_keys"

// lockKey2 is the second half of the advisory lock under which the table
// is created.
const lockKey2 = math.MinInt32 + 7

// ErrInFlight reports a key claimed by another request whose lease has not
// passed.
var ErrInFlight = errors.New("idempotency: a request with this idempotency key is in flight")

// ErrLost reports a claim whose record is no longer its own: its lease
// passed and another request took the key over, or it was pruned.
var ErrLost = errors.New("idempotency: the idempotency key's claim was lost to another request")

// A Key names one record: the token that sent the request,
// the key it carried and the table it wrote to. The same key sent by two
// tokens, or to two tables, names two records.
type Key struct {
	Token, Key, Table string
}

// An Outcome is the final answer to a request, which its
// retries get again.
type Outcome struct {
	// BodySHA256 is the SHA-256 of the request's body, which a retry's
	// must equal.
	BodySHA256 [32]byte
	// Status and Body are the answer.
	Status int
	Body   []byte
	// At is when it was recorded.
	At time.Time
}

// A Claim is a request's hold on its key: the request runs,
// then Completes the claim with its outcome or Releases it.
type Claim struct {
	r     *Records
	k     Key
	owner string // random: whose the record is
}

// Records is the table of idempotency records of a deployment.
type Records struct {
	db    store.ServiceDB
	ident string
	made  atomic.Bool // the table exists
}

// New returns the table of idempotency records in db. The table is
// created by the first claim.
func New(db store.ServiceDB) *Records {
	return &Records{db: db, ident: db.Ident(table)}
}

// ensure creates the table of records unless this process made sure of
// it before.
func (r *Records) ensure(ctx context.Context) error {
	if r.made.Load() {
		return nil
	}
	err := r.db.Ensure(ctx, "idempotency", lockKey2,
		// A pending record has an owner and a lease; a final one a
		// status, a body and its body's hash.
		`CREATE TABLE IF NOT EXISTS `+r.ident+` (
	token_name   text NOT NULL,
	idem_key     text NOT NULL,
	table_name   text NOT NULL,
	owner        text NOT NULL,
	lease_until  timestamptz NOT NULL,
	status       integer,
	body_sha256  bytea,
	response     bytea,
	completed_at timestamptz,
	PRIMARY KEY (token_name, idem_key, table_name),
	CHECK ((status IS NULL) = (completed_at IS NULL)))`,
		`CREATE INDEX IF NOT EXISTS `+table+`_expiry ON `+r.ident+
			` (coalesce(completed_at, lease_until))`)
	if err != nil {
		return fmt.Errorf("idempotency: the table of records: %w", err)
	}
	r.made.Store(true)
	return nil
}

// Claim claims k for a request at now, leased until now+lease.
// A recorded outcome younger than retention answers instead: it is
// returned, and the claim is nil. A key whose lease another request holds
// is ErrInFlight. A pending record whose lease has passed (its
// request died) and an outcome older than retention are taken over.
// A failure of the database is a *series.Error of its kind (pgerr), so
// that one worth retrying, a connection lost among them, says so.
func (r *Records) Claim(ctx context.Context, k Key, now time.Time, lease, retention time.Duration) (*Claim, *Outcome, error) {
	if err := r.ensure(ctx); err != nil {
		return nil, nil, pgerr.Classify("claim idempotency key", k.Table, err)
	}
	b := make([]byte, 16)
	rand.Read(b) // never fails
	c := &Claim{r: r, k: k, owner: hex.EncodeToString(b)}
	// The record may vanish between the claim and the read (pruned, or
	// released by its request): then claim again, a bounded number of
	// times, since each round means another request moved.
	for range 3 {
		tag, err := r.db.Pool.Exec(ctx, `INSERT INTO `+r.ident+` AS r
	(token_name, idem_key, table_name, owner, lease_until) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (token_name, idem_key, table_name) DO UPDATE
	SET owner = excluded.owner, lease_until = excluded.lease_until,
		status = NULL, body_sha256 = NULL, response = NULL, completed_at = NULL
	WHERE (r.status IS NULL AND r.lease_until <= $6) OR r.completed_at <= $7`,
			k.Token, k.Key, k.Table, c.owner, now.Add(lease), now, now.Add(-retention))
		if err != nil {
			return nil, nil, pgerr.Classify("claim idempotency key", k.Table, fmt.Errorf("idempotency: claim: %w", err))
		}
		if tag.RowsAffected() == 1 {
			return c, nil, nil
		}
		var (
			status *int32
			sum    []byte
			o      Outcome
			at     *time.Time
		)
		err = r.db.Pool.QueryRow(ctx, `SELECT status, body_sha256, response, completed_at FROM `+r.ident+`
WHERE token_name = $1 AND idem_key = $2 AND table_name = $3`, k.Token, k.Key, k.Table).Scan(&status, &sum, &o.Body, &at)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			continue
		case err != nil:
			return nil, nil, pgerr.Classify("claim idempotency key", k.Table, fmt.Errorf("idempotency: read record: %w", err))
		case status == nil:
			return nil, nil, ErrInFlight
		case len(sum) != len(o.BodySHA256):
			return nil, nil, fmt.Errorf("idempotency: the record of %q has a hash of %d bytes", k.Key, len(sum))
		}
		o.Status, o.At = int(*status), *at
		copy(o.BodySHA256[:], sum)
		if o.Body == nil {
			o.Body = []byte{}
		}
		return nil, &o, nil
	}
	return nil, nil, &series.Error{Kind: series.Unavailable, Op: "claim idempotency key",
		Err: errors.New("the record changed under three claims in a row")}
}

// Extend moves the claim's lease to until, as a request that still runs
// does well before its lease passes.
func (c *Claim) Extend(ctx context.Context, until time.Time) error {
	return c.update(ctx, "extend", `UPDATE `+c.r.ident+` SET lease_until = $5
WHERE token_name = $1 AND idem_key = $2 AND table_name = $3 AND owner = $4 AND status IS NULL`, until)
}

// Complete records o as the key's outcome, to answer its retries.
func (c *Claim) Complete(ctx context.Context, o Outcome) error {
	if o.Body == nil {
		o.Body = []byte{}
	}
	return c.update(ctx, "complete", `UPDATE `+c.r.ident+`
SET status = $5, body_sha256 = $6, response = $7, completed_at = $8
WHERE token_name = $1 AND idem_key = $2 AND table_name = $3 AND owner = $4 AND status IS NULL`,
		int32(o.Status), o.BodySHA256[:], o.Body, o.At)
}

// Release gives the key up without an outcome, so that a retry runs the
// request again: what a request whose failure is worth retrying does.
func (c *Claim) Release(ctx context.Context) error {
	err := c.update(ctx, "release", `DELETE FROM `+c.r.ident+`
WHERE token_name = $1 AND idem_key = $2 AND table_name = $3 AND owner = $4 AND status IS NULL`)
	if errors.Is(err, ErrLost) {
		return nil // not ours to release any more
	}
	return err
}

// update runs sql on the claim's record, of which $1 to $4 name the key
// and the owner; no row is ErrLost.
func (c *Claim) update(ctx context.Context, op, sql string, args ...any) error {
	tag, err := c.r.db.Pool.Exec(ctx, sql, append([]any{c.k.Token, c.k.Key, c.k.Table, c.owner}, args...)...)
	switch {
	case err != nil:
		return fmt.Errorf("idempotency: %s claim: %w", op, err)
	case tag.RowsAffected() == 0:
		return fmt.Errorf("idempotency: %s claim of %q: %w", op, c.k.Key, ErrLost)
	}
	return nil
}

// Prune deletes the outcomes recorded before before and the
// pending records whose lease passed before it, and returns how many.
func (r *Records) Prune(ctx context.Context, before time.Time) (int64, error) {
	tag, err := r.db.Pool.Exec(ctx, `DELETE FROM `+r.ident+` WHERE coalesce(completed_at, lease_until) < $1`, before)
	if pgerr.NoTable(err) {
		return 0, nil // no key was ever claimed
	}
	if err != nil {
		return 0, fmt.Errorf("idempotency: prune: %w", err)
	}
	return tag.RowsAffected(), nil
}
