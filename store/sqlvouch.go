package store

import (
	"context"

	"github.com/meterstore/meterstore/internal/archive"
	"github.com/meterstore/meterstore/internal/pgerr"
	"github.com/meterstore/meterstore/internal/query"
)

// vouch folds the SQL path's vetting of table's watermark into the
// statement that takes its hot snapshot, as the typed read does: the
// archival ledger's watermark read there, after W, vouches for W
// (archive.Vouches) where VetWatermark would have passed it.
func (s *Store) vouch(table string) *query.Vouch {
	return &query.Vouch{
		Ledger: func(ctx context.Context) (func(arg func(any) string) string, bool, error) {
			exists, err := s.ledgerExists(ctx)
			if s.sqlHook != nil {
				s.sqlHook()
			}
			if err != nil || !exists {
				return nil, exists, err
			}
			return func(arg func(any) string) string { return s.arch.LedgerWatermark(table, arg) }, true, nil
		},
		Vouches: archive.Vouches,
		Failed: func(err error) {
			if pgerr.NoTable(err) { // the ledger dropped since
				s.ledgerSeen.Store(false)
			}
		},
	}
}
