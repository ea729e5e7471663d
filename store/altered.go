package store

// Altered files: the cold files that a verification or a read found not
// to be the files their commits recorded. Their record is package
// altered's, in the hot tier's database; the store wires it to the reads
// (Store.vetPlan, readFoundAltered), status and verification.

import (
	"context"
	"slices"
	"time"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/internal/altered"
	"github.com/meterstore/meterstore/internal/cold"
)

// alteredTimeout bounds recording a finding of a read, which runs after
// the read's own context may have ended.
const alteredTimeout = 10 * time.Second

// readFoundAltered records a file a read of table name found altered, so
// that status reports it and every process refuses it from now on.
func (s *Store) readFoundAltered(ctx context.Context, name string, e *cold.AlteredFileError) {
	s.log.Error("store: a cold data file is not the file its commit recorded; reads refuse it",
		"table", name, "file", e.File, "reason", e.Reason)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), alteredTimeout)
	defer cancel()
	if err := s.altered.Add(ctx, name, []*cold.AlteredFileError{e}); err != nil {
		s.log.Warn("store: recording an altered file", "table", name, "file", e.File, "err", err)
	}
}

// noteAltered records what status found of table name, unless it is
// recorded already: status runs on every readiness probe, and a finding is
// logged when it is made, not on every look.
func (s *Store) noteAltered(ctx context.Context, name string, e *cold.AlteredFileError) {
	found, err := s.altered.Files(ctx, name)
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
	found, err := s.altered.Files(ctx, name)
	if err != nil || !slices.ContainsFunc(found, func(a altered.File) bool { return a.Metadata }) {
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
	cleared, err := s.altered.ClearMetadata(ctx, name, objects)
	if err != nil {
		s.log.Warn("store: clearing the findings of a restored metadata file", "table", name, "err", err)
		return
	}
	if cleared > 0 {
		s.log.Info("store: what vouches for the cold files is the committed again; its findings are cleared",
			"table", name, "findings", cleared)
	}
}
