package store

// Altered files: the cold data files that a verification or a read found
// not to be the files their commits recorded, kept in the hot tier's
// database so that every process of a deployment refuses to read them and
// reports its table unhealthy, until a verification finds them intact
// again (an operator restored them).

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/pgerr"
)

// alteredFileTable holds the findings, in the hot tier's schema.
const alteredFileTable = "altered_files"

// alteredFileLockKey2 is the second half of the advisory lock under which
// the table is created; the first is a hash of the schema.
const alteredFileLockKey2 = math.MinInt32 + 13

// alteredTimeout bounds recording a finding of a read, which runs after
// the read's own context may have ended.
const alteredTimeout = 10 * time.Second

// An AlteredFile is a cold data file found not to be the file its commit
// recorded.
type AlteredFile struct {
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

func (s *Store) alteredFileIdent() string {
	return pgx.Identifier{s.hot.Schema(), alteredFileTable}.Sanitize()
}

// ensureAlteredFiles creates the table unless it exists. It runs when a
// finding is first recorded, not at Open: a deployment that never had one
// has no table, and reads take that for none.
func (s *Store) ensureAlteredFiles(ctx context.Context) error {
	err := s.ensureServiceTable(ctx, alteredFileTable, alteredFileLockKey2,
		`CREATE TABLE IF NOT EXISTS `+s.alteredFileIdent()+` (
	table_name text NOT NULL,
	file       text NOT NULL,
	reason     text NOT NULL,
	by_digest  boolean NOT NULL,
	metadata   boolean NOT NULL,
	found_at   timestamptz NOT NULL,
	PRIMARY KEY (table_name, file))`,
		// Added later: the findings of a file that is gone.
		`ALTER TABLE `+s.alteredFileIdent()+` ADD COLUMN IF NOT EXISTS missing boolean NOT NULL DEFAULT false`)
	if err != nil {
		return fmt.Errorf("store: the table of altered files: %w", err)
	}
	return nil
}

// alteredFiles returns the findings of table name, by file.
func (s *Store) alteredFiles(ctx context.Context, name string) ([]AlteredFile, error) {
	found, err := s.queryAltered(ctx, name)
	if pgerr.NoColumn(err) { // a table of an earlier release
		if err := s.ensureAlteredFiles(ctx); err != nil {
			return nil, err
		}
		found, err = s.queryAltered(ctx, name)
	}
	return found, err
}

func (s *Store) queryAltered(ctx context.Context, name string) ([]AlteredFile, error) {
	rows, err := s.opts.Pool.Query(ctx, `SELECT file, reason, by_digest, metadata, missing, found_at FROM `+s.alteredFileIdent()+
		` WHERE table_name = $1 ORDER BY file`, name)
	if err == nil {
		var out []AlteredFile
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (AlteredFile, error) {
			var a AlteredFile
			err := r.Scan(&a.File, &a.Reason, &a.ByDigest, &a.Metadata, &a.Missing, &a.FoundAt)
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

// recordAltered records what a verification or a read of table name found.
func (s *Store) recordAltered(ctx context.Context, name string, found []*cold.AlteredFileError) error {
	if len(found) == 0 {
		return nil
	}
	if err := s.ensureAlteredFiles(ctx); err != nil {
		return err
	}
	b := &pgx.Batch{}
	for _, f := range found {
		b.Queue(`INSERT INTO `+s.alteredFileIdent()+` (table_name, file, reason, by_digest, metadata, missing, found_at) VALUES ($1, $2, $3, $4, $5, $6, now())
ON CONFLICT (table_name, file) DO UPDATE SET reason = excluded.reason, by_digest = excluded.by_digest, metadata = excluded.metadata, missing = excluded.missing`,
			name, f.File, f.Reason, f.ByDigest, f.Metadata, f.Missing)
	}
	if err := s.opts.Pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("store: record altered files of %s: %w", name, err)
	}
	return nil
}

// settleAltered makes the findings of table name what a verification just
// found: found are recorded, and every earlier finding it did not repeat
// is cleared, but one by digest only by a deep verification.
func (s *Store) settleAltered(ctx context.Context, name string, found []*cold.AlteredFileError, deep bool) error {
	if err := s.recordAltered(ctx, name, found); err != nil {
		return err
	}
	files := make([]string, len(found))
	for i, f := range found {
		files[i] = f.File
	}
	_, err := s.opts.Pool.Exec(ctx, `DELETE FROM `+s.alteredFileIdent()+
		` WHERE table_name = $1 AND file <> ALL($2) AND ($3 OR NOT by_digest)`, name, files, deep)
	if pgerr.NoTable(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: clear altered files of %s: %w", name, err)
	}
	return nil
}

// vetPlan refuses a cold plan of table name that holds a file found
// altered, or any plan while what vouches for its files is, with an
// *cold.AlteredFileError naming the file.
func (s *Store) vetPlan(ctx context.Context, name string, p cold.Plan) error {
	found, err := s.alteredFiles(ctx, name)
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

// readFoundAltered records a file a read of table name found altered, so
// that status reports it and every process refuses it from now on.
func (s *Store) readFoundAltered(ctx context.Context, name string, e *cold.AlteredFileError) {
	s.log.Error("store: a cold data file is not the file its commit recorded; reads refuse it",
		"table", name, "file", e.File, "reason", e.Reason)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), alteredTimeout)
	defer cancel()
	if err := s.recordAltered(ctx, name, []*cold.AlteredFileError{e}); err != nil {
		s.log.Warn("store: recording an altered file", "table", name, "file", e.File, "err", err)
	}
}

// alteredStatus returns the findings of table name as status reports
// them: their number, and an error naming each (wrapping cold.ErrAltered).
func (s *Store) alteredStatus(ctx context.Context, name string) (int64, error) {
	found, err := s.alteredFiles(ctx, name)
	if err != nil {
		return -1, err
	}
	errs := make([]error, len(found))
	for i, a := range found {
		errs[i] = &cold.AlteredFileError{Table: name, File: a.File, Reason: a.Reason, ByDigest: a.ByDigest, Metadata: a.Metadata, Missing: a.Missing}
	}
	return int64(len(found)), errors.Join(errs...)
}

// noteAltered records what status found of table name, unless it is
// recorded already: status runs on every readiness probe, and a finding is
// logged when it is made, not on every look.
func (s *Store) noteAltered(ctx context.Context, name string, e *cold.AlteredFileError) {
	found, err := s.alteredFiles(ctx, name)
	if err == nil {
		for _, a := range found {
			if a.File == e.File {
				return
			}
		}
	}
	s.readFoundAltered(ctx, name, e)
}

// reprove clears the findings of table name about what the chain of its
// current snapshot depends on (the metadata file, digest index, manifest
// list, manifests) once a proof afresh finds each the committed one again:
// an operator restored it, or a commit since replaced the metadata file. These are proven whole cheaply, unlike a data
// file, whose finding waits for a verification (a deep one for a digest).
func (s *Store) reprove(ctx context.Context, name string, ct *cold.Table) {
	found, err := s.alteredFiles(ctx, name)
	if err != nil || !slices.ContainsFunc(found, func(a AlteredFile) bool { return a.Metadata }) {
		return
	}
	if mc := catalog.MirrorOf(s.opts.Catalog); mc != nil {
		if _, err := mc.VerifyMetadata(ctx, ct.Identifier()); err != nil {
			return
		}
	}
	objects, err := s.cold.ProveChain(ctx, ct)
	if err != nil {
		return
	}
	// A metadata file other than the current one is read by nothing: its
	// finding goes with the proof of the current one.
	tag, err := s.opts.Pool.Exec(ctx, `DELETE FROM `+s.alteredFileIdent()+
		` WHERE table_name = $1 AND metadata AND (file = ANY($2) OR file LIKE '%.metadata.json')`, name, objects)
	if err != nil {
		s.log.Warn("store: clearing the findings of a restored metadata file", "table", name, "err", err)
		return
	}
	if tag.RowsAffected() > 0 {
		s.log.Info("store: what vouches for the cold files is the committed again; its findings are cleared",
			"table", name, "findings", tag.RowsAffected())
	}
}

// forgetAltered drops the findings of table name, which a purge destroyed:
// a table declared again under its name starts with none.
func (s *Store) forgetAltered(ctx context.Context, name string) error {
	_, err := s.opts.Pool.Exec(ctx, `DELETE FROM `+s.alteredFileIdent()+` WHERE table_name = $1`, name)
	if pgerr.NoTable(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: forget the altered files of %s: %w", name, err)
	}
	return nil
}
