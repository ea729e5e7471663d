package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/meterstore/meterstore/internal/archive"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/internal/pgerr"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// The typed read of a series goes to the tiers directly, without an SQL
// engine: one statement to PostgreSQL that resolves in the primary key's
// order, and arrow-go's Parquet reader on the planned files' pages (see
// cold.SeriesReader). Its split at W agrees with the hot read as an SQL
// statement's does: W and the files come from one cold snapshot, planned
// first; the hot rows from W on then come from one statement whose own
// snapshot also lists the partitions, and a partition at or above W that
// was detached then (an archival of the range in flight, its commit not
// yet in the plan) makes the attempt read again, at most typedRetries
// times, and then fail with ErrInFlight. The archival ledger's watermark,
// which vets W, is read in that statement too, once the ledger exists:
// read after the plan it can vouch for W but not condemn it (see
// archive.Vouches), and where it does not vouch the attempt reads the
// ledger first, then plans, as VetWatermark does. A hot read is then one
// catalog read and one statement; where the catalog's log is in the
// statement's database, one statement alone, the plan made in the cold
// state an earlier read kept and the log's head read in the statement to
// prove it still current (see typedWarm).

// typedRetries is how often a typed read whose range is in flight is read
// again, after typedBackoff << attempt; the SQL path's numbers.
const (
	typedRetries = 3
	typedBackoff = 50 * time.Millisecond
)

// A SeriesResult is the answer of SeriesRead: the readings and how the
// tiers were read for them.
type SeriesResult struct {
	// Readings are the resolved readings by from, then identity values.
	Readings []Reading
	// Read says what a query's ResultHeader says of its table: the
	// watermark, tiers, cold snapshot, ceiling and mode read.
	Read TableRead
}

// SeriesRead returns the readings SeriesReadings returns and how they
// were read.
func (s *Store) SeriesRead(ctx context.Context, name string, q SeriesQuery) (*SeriesResult, error) {
	return s.typedRead(ctx, name, q, false)
}

// typedQuery is a SeriesQuery checked: its codes parsed, its identity
// values those of identity columns.
type typedQuery struct {
	decl   *series.Table
	malo   string
	obis   string
	q      SeriesQuery
	latest bool
}

// typedRead reads q of table name as SeriesRead does; with latest, only
// the reading with the latest from.
func (s *Store) typedRead(ctx context.Context, name string, q SeriesQuery, latest bool) (*SeriesResult, error) {
	begin := time.Now()
	t, err := s.table(name)
	if err != nil {
		return nil, err
	}
	tq, err := checkTyped(t, name, q, latest)
	if err != nil {
		return nil, err
	}
	_, ct, _, err := s.openedHot(ctx, name)
	if err != nil {
		return nil, err
	}
	if d := s.opts.Query.timeout(); d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	res := &SeriesResult{Read: TableRead{Name: name, Range: series.Range{From: q.From, To: q.To}, Ceiling: q.Read.KnownAt, Mode: q.Read.Mode}}
	var rs []Reading
	switch {
	case q.Read.Mode == ReadHistorical:
		rs, err = s.typedHistorical(ctx, t, ct, tq, &res.Read)
	case q.Read.Mode == ReadOperational:
		rs, err = s.typedOperational(ctx, tq, &res.Read)
	case q.Read.AsOfSnapshot != 0 || !q.Read.AsOf.IsZero():
		rs, err = s.typedAsOf(ctx, t, ct, tq, &res.Read)
	default:
		rs, err = s.typedCurrent(ctx, t, ct, tq, q.From, q.Read.KnownAt, &res.Read)
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			err = fmt.Errorf("%w: %w", ErrQueryTimeout, err)
		}
		return nil, fmt.Errorf("store: read series of %s: %w", name, err)
	}
	res.Readings = finishTyped(tq, rs)
	s.metrics.Queried(ctx, name, time.Since(begin))
	return res, nil
}

// checkTyped checks q, a typed read of t, as SQL would check its values.
func checkTyped(t *table, name string, q SeriesQuery, latest bool) (typedQuery, error) {
	bad := func(err error) (typedQuery, error) {
		return typedQuery{}, &series.Error{Kind: series.InvalidInput, Op: "read series", Table: name, Err: err}
	}
	malo, err := metering.ParseMaLo(q.MaLo)
	if err != nil {
		return bad(err)
	}
	obis, err := metering.ParseOBIS(q.OBIS)
	if err != nil {
		return bad(err)
	}
	o := q.Read
	switch {
	case o.AsOfSnapshot < 0:
		return bad(fmt.Errorf("as of snapshot %d: not a snapshot id", o.AsOfSnapshot))
	case o.AsOfSnapshot != 0 && !o.AsOf.IsZero():
		return bad(errors.New("as of a snapshot and as of a time: choose one"))
	case o.Mode < ReadAuto || o.Mode > ReadOperational:
		return bad(fmt.Errorf("read mode %d", o.Mode))
	case o.Mode != ReadAuto && (o.AsOfSnapshot != 0 || !o.AsOf.IsZero()):
		return bad(fmt.Errorf("a %s read reads the current state: no as of", o.Mode))
	}
	decl, _ := t.running()
	for k := range q.Identity {
		if !slices.ContainsFunc(decl.Identity(), func(c series.Column) bool { return c.Name == k }) {
			return bad(fmt.Errorf("%q is not an identity column of %s", k, name))
		}
	}
	return typedQuery{decl: decl, malo: malo.String(), obis: obis.String(), q: q, latest: latest}, nil
}

// finishTyped orders the resolved readings rs of tq by from, then by
// identity values, keeps those of its qualities and, for the latest, the
// last.
func finishTyped(tq typedQuery, rs []Reading) []Reading {
	if len(tq.q.Qualities) > 0 {
		rs = slices.DeleteFunc(rs, func(r Reading) bool { return !slices.Contains(tq.q.Qualities, r.Quality) })
	}
	ident := tq.decl.Identity()
	order := func(a, b Reading) int {
		if c := a.From.Compare(b.From); c != 0 {
			return c
		}
		for _, col := range ident {
			if c := cmp.Compare(a.Extra[col.Name], b.Extra[col.Name]); c != 0 {
				return c
			}
		}
		return 0
	}
	// The hot tier's readings come in the reverse order: turned, not
	// sorted, where they alone are read.
	if slices.IsSortedFunc(rs, func(a, b Reading) int { return order(b, a) }) {
		slices.Reverse(rs)
	} else {
		slices.SortFunc(rs, order)
	}
	if tq.latest && len(rs) > 1 {
		rs = rs[len(rs)-1:]
	}
	return rs
}

// typedCurrent reads tq's readings from from on in the current tiers,
// each row recorded by ceiling (zero: any), split at the current W.
func (s *Store) typedCurrent(ctx context.Context, t *table, ct *cold.Table, tq typedQuery, from, ceiling time.Time, tr *TableRead) ([]Reading, error) {
	var err error
	for attempt := range typedRetries + 1 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, errors.Join(err, ctx.Err())
			case <-time.After(typedBackoff << attempt):
			}
		}
		var rs []Reading
		rs, err = s.typedAttempt(ctx, t, ct, tq, from, ceiling, tr, true)
		if err == nil || !errors.Is(err, ErrInFlight) {
			return rs, err
		}
	}
	return nil, err
}

// typedAttempt reads the tiers once: W and the files of the current cold
// snapshot, then the hot rows from W on in one statement that lists the
// partitions too; a partition it found detached at or above where it
// read from fails the attempt with ErrInFlight. W is vetted against the
// archival ledger: with fold, by the ledger's watermark read in that
// statement, or in one of its own where the read needs no hot rows, and
// where that does not vouch for W (archive.Vouches) the attempt is made
// again without fold, the ledger read before the plan. Until a read has
// seen the ledger, the statement reads whether it exists instead
// (archive.LedgerProbe), so that a deployment never archived pays no
// round trip for it either. A plan made in a
// kept cold state holds only if the statement read the head it was
// loaded from; otherwise, or where no statement is needed, the attempt
// is made again without fold, the state loaded afresh.
func (s *Store) typedAttempt(ctx context.Context, t *table, ct *cold.Table, tq typedQuery, from, ceiling time.Time, tr *TableRead, fold bool) ([]Reading, error) {
	q := tq.q
	name := t.decl.Name
	rng := series.Range{From: from, To: q.To, MaLo: []string{tq.malo}, OBIS: []string{tq.obis}}
	vet := !fold
	probe := fold && !s.ledgerSeen.Load()
	p, kept, err := s.typedPlan(ctx, t, ct, rng, vet)
	if err != nil {
		return s.typedHotOnly(ctx, tq, from, ceiling, tr, err)
	}
	w, hasW := p.Watermark, p.HasWatermark
	if tr.AsOf && tr.HasWatermark && (!hasW || w.Before(tr.Watermark)) {
		return nil, fmt.Errorf("the cold tier's watermark %s is below the watermark %s of the snapshot read as of",
			stampOf(w), stampOf(tr.Watermark))
	}
	needHot := !hasW || q.To.IsZero() || q.To.After(w)
	needCold := hasW && (from.IsZero() || from.Before(w)) && len(p.Files) > 0
	if kept.head != nil && !needHot {
		// No statement to check the kept state's head in: plan afresh.
		return s.typedAttempt(ctx, t, ct, tq, from, ceiling, tr, false)
	}
	lo := from
	if hasW && w.After(lo) {
		lo = w
	}
	var out []Reading
	tr.Tiers = nil
	if hasW && (from.IsZero() || from.Before(w)) {
		tr.Tiers = append(tr.Tiers, "cold")
	}
	if s.typedHook != nil {
		s.typedHook()
	}
	if needHot {
		hq := s.hotQuery(tq, lo, ceiling)
		switch {
		case probe:
			hq.Beside = s.arch.LedgerProbe
		case fold:
			hq.Beside = func(arg func(any) string) string { return s.arch.LedgerWatermark(name, arg) }
		}
		hq.Head = kept.head
		hr, err := s.hot.ReadSeries(ctx, tq.decl, hq)
		if fold && !probe && pgerr.NoTable(err) { // the ledger dropped since
			s.ledgerSeen.Store(false)
			return s.typedAttempt(ctx, t, ct, tq, from, ceiling, tr, false)
		}
		if err != nil {
			return nil, fmt.Errorf("hot tier: %w", err)
		}
		if probe && hr.HasBeside {
			// The ledger exists: its watermark is read from now on, and
			// this read vetted without fold.
			s.ledgerSeen.Store(true)
			return s.typedAttempt(ctx, t, ct, tq, from, ceiling, tr, false)
		}
		if kept.head != nil && (!hr.HasHead || hr.Head != kept.seq) {
			// A commit landed since the state was loaded: W and the
			// files may not be those of the statement's snapshot.
			s.warm.forget(name, kept.seq)
			return s.typedAttempt(ctx, t, ct, tq, from, ceiling, tr, false)
		}
		if fold && !probe && !archive.Vouches(w, hasW, hr.Beside, hr.HasBeside) {
			return s.typedAttempt(ctx, t, ct, tq, from, ceiling, tr, false)
		}
		if hr.Detached.After(lo) {
			return nil, fmt.Errorf("%w: partitions up to %s are detached and not yet archived, the read needs rows from %s",
				ErrInFlight, stampOf(hr.Detached), stampOf(lo))
		}
		out = hr.Readings
		tr.Tiers = append(tr.Tiers, "hot")
	} else if probe {
		// No statement to probe in: vet without fold.
		return s.typedAttempt(ctx, t, ct, tq, from, ceiling, tr, false)
	} else if fold {
		if lw, lok, err := s.arch.RecordedWatermark(ctx, name); err != nil || !archive.Vouches(w, hasW, lw, lok) {
			return s.typedAttempt(ctx, t, ct, tq, from, ceiling, tr, false)
		}
	}
	if needCold && !(tq.latest && len(out) > 0) {
		to := q.To
		if to.IsZero() || to.After(w) {
			to = w
		}
		rs, err := s.series.Read(ctx, tq.decl, p, s.coldFilter(tq, from, to, ceiling))
		if err != nil {
			return nil, s.coldFound(ctx, t.decl.Name, err)
		}
		out = append(out, rs...)
	}
	if !tr.AsOf {
		// As a statement reports it: the snapshot only where the range
		// needed one.
		tr.Watermark, tr.HasWatermark, tr.Snapshot = w, hasW, 0
		if hasW && (from.IsZero() || from.Before(w)) {
			tr.Snapshot = p.SnapshotID
		}
	}
	return out, nil
}

// typedHotOnly answers from the hot tier alone when the cold tier failed
// with cause, if the range lies at or above the hot floor the read's own
// statement saw; otherwise the read fails, the cold tier unreachable.
func (s *Store) typedHotOnly(ctx context.Context, tq typedQuery, from, ceiling time.Time, tr *TableRead, cause error) ([]Reading, error) {
	unreachable := cause
	if !errors.Is(cause, ErrColdUnreachable) {
		unreachable = fmt.Errorf("%w: %w", ErrColdUnreachable, cause)
	}
	var altered *cold.AlteredFileError
	if errors.As(cause, &altered) || tr.AsOf {
		return nil, unreachable
	}
	hr, err := s.hot.ReadSeries(ctx, tq.decl, s.hotQuery(tq, from, ceiling))
	if err != nil {
		return nil, errors.Join(unreachable, fmt.Errorf("hot tier: %w", err))
	}
	if hr.Attached.IsZero() || from.Before(hr.Attached) {
		return nil, fmt.Errorf("%w; the hot tier alone holds every row only from %s, the read needs rows from %s",
			unreachable, stampOf(hr.Attached), stampOf(from))
	}
	tr.Tiers, tr.Watermark, tr.HasWatermark = []string{"hot"}, time.Time{}, false
	return hr.Readings, nil
}

// typedHistorical reads tq's rows below W from the cold tier alone, with
// no PostgreSQL connection, as a historical statement does.
func (s *Store) typedHistorical(ctx context.Context, t *table, ct *cold.Table, tq typedQuery, tr *TableRead) ([]Reading, error) {
	q := tq.q
	p, err := s.cold.Plan(ctx, ct, series.Range{From: q.From, To: q.To, MaLo: []string{tq.malo}, OBIS: []string{tq.obis}})
	if err == nil {
		var lp cold.Plan
		if lp, err = p.Local(ctx, s.copies); err == nil && s.opts.Query.VerifyDigests {
			err = p.CheckDigests(ctx, lp)
		}
		p = lp
	}
	if err != nil {
		return nil, s.coldFound(ctx, t.decl.Name, err)
	}
	tr.Mode, tr.HasUnseen = ReadHistorical, true
	tr.Watermark, tr.HasWatermark, tr.Snapshot = p.Watermark, p.HasWatermark, p.SnapshotID
	if !p.HasWatermark {
		return nil, nil
	}
	tr.Tiers, tr.Unseen = []string{"cold"}, series.Range{From: p.Watermark}
	to := q.To
	if to.IsZero() || to.After(p.Watermark) {
		to = p.Watermark
	}
	if !q.From.IsZero() && !q.From.Before(to) {
		return nil, nil
	}
	rs, err := s.series.Read(ctx, tq.decl, p, s.coldFilter(tq, q.From, to, q.Read.KnownAt))
	if err != nil {
		return nil, s.coldFound(ctx, t.decl.Name, err)
	}
	return rs, nil
}

// typedOperational reads tq's rows of the attached partitions alone, with
// no Iceberg round trip, as an operational statement does.
func (s *Store) typedOperational(ctx context.Context, tq typedQuery, tr *TableRead) ([]Reading, error) {
	hr, err := s.hot.ReadSeries(ctx, tq.decl, s.hotQuery(tq, tq.q.From, tq.q.Read.KnownAt))
	if err != nil {
		return nil, fmt.Errorf("hot tier: %w", err)
	}
	tr.Mode, tr.Tiers = ReadOperational, []string{"hot"}
	if !hr.Attached.IsZero() {
		tr.Unseen, tr.HasUnseen = series.Range{To: hr.Attached}, true
	}
	return hr.Readings, nil
}

// typedAsOf reads tq as of a past cold snapshot: its files below its W,
// and from its W on the current tiers' rows recorded by its commit.
func (s *Store) typedAsOf(ctx context.Context, t *table, ct *cold.Table, tq typedQuery, tr *TableRead) ([]Reading, error) {
	q := tq.q
	ref := cold.SnapshotRef{ID: q.Read.AsOfSnapshot, At: q.Read.AsOf}
	rng := series.Range{From: q.From, To: q.To, MaLo: []string{tq.malo}, OBIS: []string{tq.obis}}
	past, err := s.cold.PlanAt(ctx, ct, rng, ref)
	if err == nil {
		past, err = s.typedLocal(ctx, t.decl.Name, past)
	}
	switch {
	case errors.Is(err, ErrNoSnapshot):
		return nil, fmt.Errorf("as of: %w", err)
	case err != nil:
		return nil, fmt.Errorf("as of: %w", s.coldFound(ctx, t.decl.Name, err))
	}
	ceiling := past.Committed
	if k := q.Read.KnownAt; !k.IsZero() && k.Before(ceiling) {
		ceiling = k
	}
	tr.AsOf, tr.Snapshot, tr.SnapshotAt, tr.Ceiling = true, past.SnapshotID, past.Committed, ceiling
	tr.Watermark, tr.HasWatermark = past.Watermark, past.HasWatermark
	var out []Reading
	from := q.From
	if past.HasWatermark {
		to := q.To
		if to.IsZero() || to.After(past.Watermark) {
			to = past.Watermark
		}
		if q.From.IsZero() || q.From.Before(to) {
			rs, err := s.series.Read(ctx, tq.decl, past, s.coldFilter(tq, q.From, to, q.Read.KnownAt))
			if err != nil {
				return nil, s.coldFound(ctx, t.decl.Name, err)
			}
			out = rs
		}
		if past.Watermark.After(from) {
			from = past.Watermark
		}
	}
	if !q.To.IsZero() && !from.Before(q.To) {
		tr.Tiers = []string{"cold"}
		return out, nil
	}
	// From the snapshot's W on, the current tiers within the ceiling.
	rest, err := s.typedCurrent(ctx, t, ct, tq, from, ceiling, tr)
	if err != nil {
		return nil, err
	}
	if past.HasWatermark && !slices.Contains(tr.Tiers, "cold") {
		tr.Tiers = append([]string{"cold"}, tr.Tiers...)
	}
	return append(out, rest...), nil
}

// A keptPlan says that a typed plan was made in a kept cold state (see
// typedWarm): its statement reads the log's head with head and the plan
// holds if that is seq. head is nil for a plan made afresh.
type keptPlan struct {
	head headQuery
	seq  int64
}

// typedPlan plans the cold snapshot for rng, its watermark vetted against
// the archival ledger if vet says so (else the caller vets it), its files
// against the record of altered ones, and makes its files local. Unless
// vet, it plans in the state kept from an earlier read where there is one
// whose head the caller's statement can check, and says so.
func (s *Store) typedPlan(ctx context.Context, t *table, ct *cold.Table, rng series.Range, vet bool) (cold.Plan, keptPlan, error) {
	if err := t.coldState(); err != nil {
		return cold.Plan{}, keptPlan{}, err
	}
	name := t.decl.Name
	if !vet {
		if l, ok := s.warm.get(name); ok {
			if head := s.headOf(ctx, ct); head != nil {
				p, err := s.cold.PlanIn(ctx, ct, l, rng)
				if err != nil {
					return cold.Plan{}, keptPlan{}, s.coldFound(ctx, name, err)
				}
				p, err = s.typedLocal(ctx, name, p)
				return p, keptPlan{head: head, seq: l.Seq}, err
			}
		}
	}
	var (
		p cold.Plan
		l cold.Loaded
	)
	plan := func(ctx context.Context) (time.Time, bool, error) {
		var err error
		if l, err = s.cold.Load(ctx, ct); err != nil {
			return time.Time{}, false, err
		}
		p, err = s.cold.PlanIn(ctx, ct, l, rng)
		return p.Watermark, p.HasWatermark, err
	}
	var err error
	if vet {
		_, _, err = s.arch.VetWatermark(ctx, name, plan)
	} else {
		_, _, err = plan(ctx)
	}
	if err != nil {
		return cold.Plan{}, keptPlan{}, s.coldFound(ctx, name, err)
	}
	if p, err = s.typedLocal(ctx, name, p); err != nil {
		return cold.Plan{}, keptPlan{}, err
	}
	s.warm.put(name, l)
	return p, keptPlan{}, nil
}

// ledgerExists reports whether the archival ledger exists, asking
// PostgreSQL until it does, and again after a typed read found it gone.
func (s *Store) ledgerExists(ctx context.Context) (bool, error) {
	if s.ledgerSeen.Load() {
		return true, nil
	}
	// Asked on the series reads' connections: until the first archival
	// this is every typed read's, and writes may hold every other.
	ok, err := s.arch.LedgerExistsOn(ctx, s.readsDB())
	if ok {
		s.ledgerSeen.Store(true)
	}
	return ok, err
}

// typedLocal vets plan p of table name against the record of altered
// files and makes its files local, checking their digests if
// QueryOptions.VerifyDigests says so.
func (s *Store) typedLocal(ctx context.Context, name string, p cold.Plan) (cold.Plan, error) {
	if len(p.Files) == 0 {
		return p, nil
	}
	if err := s.altered.Vet(ctx, name, p); err != nil {
		return cold.Plan{}, err
	}
	lp, err := p.Local(ctx, s.copies)
	if err == nil && s.opts.Query.VerifyDigests {
		err = p.CheckDigests(ctx, lp)
	}
	if err != nil {
		return cold.Plan{}, s.coldFound(ctx, name, err)
	}
	return lp, nil
}

// coldFound records a file err reports altered, as a statement's read
// does, and returns err as a cold read's error: wrapping
// ErrColdUnreachable, retryable unless a file is not the one committed.
func (s *Store) coldFound(ctx context.Context, name string, err error) error {
	var altered *cold.AlteredFileError
	if errors.As(err, &altered) {
		s.readFoundAltered(ctx, name, altered)
	}
	return cold.Unavailable("read", name, err)
}

// hotQuery returns the hot tier's query of tq from from on, recorded by
// ceiling.
func (s *Store) hotQuery(tq typedQuery, from, ceiling time.Time) hot.SeriesQuery {
	return hot.SeriesQuery{MaLo: tq.malo, OBIS: tq.obis, Identity: tq.q.Identity, From: from, To: tq.q.To,
		KnownAt: ceiling, Qualities: tq.q.Qualities, Latest: tq.latest}
}

// coldFilter returns the cold tier's filter of tq over [from, to),
// recorded by ceiling: the superseded marks hold where no ceiling is set.
func (s *Store) coldFilter(tq typedQuery, from, to, ceiling time.Time) cold.SeriesFilter {
	return cold.SeriesFilter{MaLo: tq.malo, OBIS: tq.obis, Identity: tq.q.Identity, From: from, To: to,
		KnownAt: ceiling, Marks: ceiling.IsZero()}
}

// stampOf formats t for an error message; the zero time is unbounded.
func stampOf(t time.Time) string {
	if t.IsZero() {
		return "nowhere"
	}
	return t.UTC().Format(time.RFC3339Nano)
}
