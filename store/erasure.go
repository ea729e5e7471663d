package store

import (
	"context"
	"errors"
	"fmt"
)

// errNoRegistry is returned by the erasure operations of a store opened
// without a subject registry.
var errNoRegistry = errors.New("store: no subject registry")

// EraseSubject carries out an erasure request for the subject naturalID:
// it unlinks every reading of the subject, audits the erasure under
// legalBasis and actor, and keeps a later delivery from linking the
// subject again (privacy.Registry.Erase). It returns the mapping rows
// removed.
func (s *Store) EraseSubject(ctx context.Context, naturalID, legalBasis, actor string) (int64, error) {
	if s.opts.Registry == nil {
		return 0, fmt.Errorf("erase: %w", errNoRegistry)
	}
	return s.opts.Registry.Erase(ctx, naturalID, legalBasis, actor)
}

// UnsuppressSubject lifts the suppression an erasure of naturalID left,
// audited under legalBasis and actor, and reports whether there was one.
func (s *Store) UnsuppressSubject(ctx context.Context, naturalID, legalBasis, actor string) (bool, error) {
	if s.opts.Registry == nil {
		return false, fmt.Errorf("unsuppress: %w", errNoRegistry)
	}
	return s.opts.Registry.Unsuppress(ctx, naturalID, legalBasis, actor)
}
