package store

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/meterstore/meterstore/internal/archive"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/pgerr"
)

// An SQL statement's cold plan is made in the cold state the typed reads
// keep (typedWarm), shared with them, where one PostgreSQL statement
// vouches for it as the vetted load would: the log's head read there is
// still the commit the state was loaded from, and the archival ledger's
// watermark read in the same snapshot vouches for the state's W. That is
// one round trip where the vetted load takes two (the ledger, then the
// log). Any commit (an archival, a late correction, a compaction) moves
// the head, and the statement loads afresh.

// keptCold returns the cold state of table ct kept by an earlier read if
// one statement read now vouches for it; ok is false otherwise, a state
// found out of date dropped.
func (s *Store) keptCold(ctx context.Context, ct *cold.Table) (cold.Loaded, bool) {
	name := ct.Name()
	l, ok := s.warm.get(name)
	if !ok {
		return cold.Loaded{}, false
	}
	head := s.headOf(ctx, ct)
	if head == nil {
		return cold.Loaded{}, false
	}
	exists, err := s.ledgerExists(ctx)
	if err != nil {
		return cold.Loaded{}, false
	}
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	cols := []string{head(arg) + `::int8`}
	if exists {
		cols = append(cols, s.arch.LedgerWatermark(name, arg))
	}
	var (
		seq *int64
		lw  *time.Time
	)
	dest := []any{&seq, &lw}[:len(cols)]
	if err := s.readsDB().QueryRow(ctx, `SELECT `+strings.Join(cols, ", "), args...).Scan(dest...); err != nil {
		if pgerr.NoTable(err) { // the ledger dropped since
			s.ledgerSeen.Store(false)
		}
		return cold.Loaded{}, false
	}
	if seq == nil || *seq != l.Seq {
		s.warm.forget(name, l.Seq)
		return cold.Loaded{}, false
	}
	w, hasW, err := l.Watermark()
	if err != nil || lw != nil && !archive.Vouches(w, hasW, *lw, true) {
		return cold.Loaded{}, false
	}
	return l, true
}
