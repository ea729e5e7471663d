// Package altered keeps the record of altered files: the cold files that
// a verification or a read found not to be the files their commits
// recorded. It lives in the hot tier's database, beside the archival
// ledger, so that every process of a deployment refuses to read them and
// reports its table unhealthy, until a verification finds them intact
// again (an operator restored them). The store wires it: when a finding
// is made, recorded, settled, cleared or forgotten is the store's to say,
// and its errors read as the store's, which reports them.
package altered

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/pgerr"
)

// Table is the record's table, in the hot tier's schema.
const Table = "altered_files"

// LockKey2 is the second half of the advisory lock under which Table is
// created (see EnsureFunc).
const LockKey2 = math.MinInt32 + 13

// An EnsureFunc creates table name in the hot tier's schema unless it
// exists: it runs stmts, the table's CREATE ... IF NOT EXISTS statements,
// under an advisory lock keyed by the schema, name and lockKey2, as
// store.ServiceDB.Ensure does for every table of the store's own.
type EnsureFunc func(ctx context.Context, name string, lockKey2 int32, stmts ...string) error

// A File is a cold file found not to be the file its commit recorded.
type File struct {
	File    string // its location, as the manifest records it
	Reason  string
	FoundAt time.Time
	// ByDigest: only its SHA-256 differs, so only a deep verification
	// clears the finding.
	ByDigest bool
	// Metadata: File vouches for the data files (a digest index, a
	// metadata file, a manifest list, a manifest); while it is altered no
	// data file of the table is read.
	Metadata bool
	// Missing: the data file is gone.
	Missing bool
}

// A Record is the record of altered files of one deployment.
type Record struct {
	pool   *pgxpool.Pool
	ident  string // Table, qualified and quoted
	ensure EnsureFunc
}

// New returns the record in schema of the database of pool, whose table
// ensure creates when a finding is first recorded.
func New(pool *pgxpool.Pool, schema string, ensure EnsureFunc) *Record {
	return &Record{pool: pool, ident: pgx.Identifier{schema, Table}.Sanitize(), ensure: ensure}
}

// create creates the table unless it exists. It runs when a finding is
// first recorded, not when a store opens: a deployment that never had one
// has no table, and reads take that for none.
func (r *Record) create(ctx context.Context) error {
	err := r.ensure(ctx, Table, LockKey2,
		`CREATE TABLE IF NOT EXISTS `+r.ident+` (
	table_name text NOT NULL,
	file       text NOT NULL,
	reason     text NOT NULL,
	by_digest  boolean NOT NULL,
	metadata   boolean NOT NULL,
	found_at   timestamptz NOT NULL,
	PRIMARY KEY (table_name, file))`,
		// Added later: the findings of a file that is gone.
		`ALTER TABLE `+r.ident+` ADD COLUMN IF NOT EXISTS missing boolean NOT NULL DEFAULT false`)
	if err != nil {
		return fmt.Errorf("store: the table of altered files: %w", err)
	}
	return nil
}

// Files returns the findings of table name, by file.
func (r *Record) Files(ctx context.Context, name string) ([]File, error) {
	found, err := r.query(ctx, name)
	if pgerr.NoColumn(err) { // a table of an earlier release
		if err := r.create(ctx); err != nil {
			return nil, err
		}
		found, err = r.query(ctx, name)
	}
	return found, err
}

func (r *Record) query(ctx context.Context, name string) ([]File, error) {
	rows, err := r.pool.Query(ctx, `SELECT file, reason, by_digest, metadata, missing, found_at FROM `+r.ident+
		` WHERE table_name = $1 ORDER BY file`, name)
	if err == nil {
		var out []File
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (File, error) {
			var a File
			err := row.Scan(&a.File, &a.Reason, &a.ByDigest, &a.Metadata, &a.Missing, &a.FoundAt)
			return a, err
		})
		if err == nil {
			return out, nil
		}
	}
	if pgerr.NoTable(err) { // nothing was ever found
		return nil, nil
	}
	return nil, fmt.Errorf("store: altered files of %s: %w", name, err)
}

// Add records what a verification or a read of table name found.
func (r *Record) Add(ctx context.Context, name string, found []*cold.AlteredFileError) error {
	if len(found) == 0 {
		return nil
	}
	if err := r.create(ctx); err != nil {
		return err
	}
	b := &pgx.Batch{}
	for _, f := range found {
		b.Queue(`INSERT INTO `+r.ident+` (table_name, file, reason, by_digest, metadata, missing, found_at) VALUES ($1, $2, $3, $4, $5, $6, now())
ON CONFLICT (table_name, file) DO UPDATE SET reason = excluded.reason, by_digest = excluded.by_digest, metadata = excluded.metadata, missing = excluded.missing`,
			name, f.File, f.Reason, f.ByDigest, f.Metadata, f.Missing)
	}
	if err := r.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("store: record altered files of %s: %w", name, err)
	}
	return nil
}

// Settle makes the findings of table name what a verification just
// found: found are recorded, and every earlier finding it did not repeat
// is cleared, but one by digest only by a deep verification.
func (r *Record) Settle(ctx context.Context, name string, found []*cold.AlteredFileError, deep bool) error {
	if err := r.Add(ctx, name, found); err != nil {
		return err
	}
	files := make([]string, len(found))
	for i, f := range found {
		files[i] = f.File
	}
	_, err := r.pool.Exec(ctx, `DELETE FROM `+r.ident+
		` WHERE table_name = $1 AND file <> ALL($2) AND ($3 OR NOT by_digest)`, name, files, deep)
	if pgerr.NoTable(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: clear altered files of %s: %w", name, err)
	}
	return nil
}

// Vet refuses a cold plan of table name that holds a file found altered,
// or any plan while what vouches for its files is, with an
// *cold.AlteredFileError naming the file.
func (r *Record) Vet(ctx context.Context, name string, p cold.Plan) error {
	found, err := r.Files(ctx, name)
	if err != nil || len(found) == 0 {
		return err
	}
	planned := make(map[string]bool, len(p.Files))
	for _, f := range p.Files {
		planned[f] = true
	}
	for _, a := range found {
		if planned[a.File] || a.Metadata {
			return &cold.AlteredFileError{Table: name, File: a.File, ByDigest: a.ByDigest, Metadata: a.Metadata, Missing: a.Missing,
				Reason: fmt.Sprintf("%s (found %s)", a.Reason, a.FoundAt.UTC().Format(time.RFC3339))}
		}
	}
	return nil
}

// Status returns the findings of table name as status reports them:
// their number, and an error naming each (wrapping cold.ErrAltered).
func (r *Record) Status(ctx context.Context, name string) (int64, error) {
	found, err := r.Files(ctx, name)
	if err != nil {
		return -1, err
	}
	errs := make([]error, len(found))
	for i, a := range found {
		errs[i] = &cold.AlteredFileError{Table: name, File: a.File, Reason: a.Reason, ByDigest: a.ByDigest, Metadata: a.Metadata, Missing: a.Missing}
	}
	return int64(len(found)), errors.Join(errs...)
}

// ClearMetadata clears the findings of table name about objects, what the
// chain of its current snapshot depends on, proven the committed ones
// again, and about every metadata file: one other than the current is
// read by nothing, so its finding goes with the proof of the current. It
// returns how many it cleared.
func (r *Record) ClearMetadata(ctx context.Context, name string, objects []string) (int64, error) {
	tag, err := r.pool.Exec(ctx, `DELETE FROM `+r.ident+
		` WHERE table_name = $1 AND metadata AND (file = ANY($2) OR file LIKE '%.metadata.json')`, name, objects)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// Forget drops the findings of table name, which a purge destroyed: a
// table declared again under its name starts with none.
func (r *Record) Forget(ctx context.Context, name string) error {
	_, err := r.pool.Exec(ctx, `DELETE FROM `+r.ident+` WHERE table_name = $1`, name)
	if pgerr.NoTable(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: forget the altered files of %s: %w", name, err)
	}
	return nil
}
