package query

import (
	"context"
	"errors"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/series"
)

// A Source gives an Engine the two tiers of one table. Its methods must be
// safe for concurrent use. A zero bound of a range is open.
type Source interface {
	// Watermark returns W (ok=false: nothing archived yet). It reads the
	// cold tier.
	Watermark(ctx context.Context) (w time.Time, ok bool, err error)
	// HotSnapshot takes a snapshot of the hot tier for one query, to be
	// read with up to conns connections at once; every HotRead of the
	// query, of any table, reads in it.
	HotSnapshot(ctx context.Context, conns int) (HotSnapshot, error)
	// HotRead opens a read of the rows in PostgreSQL that q selects, from
	// the partitions attached when snap was taken, as of that moment (see
	// HotRead). snap is one a Source of the same hot tier took.
	HotRead(ctx context.Context, snap HotSnapshot, q series.Range) (HotRead, error)
	// HotFloor tells where the hot tier's attached partitions vouch for
	// its rows; see Floor. The engine reads it after the hot scan, to make
	// sure that no partition the scan needed was detached before it, and
	// when the cold tier is unreachable, to answer from the hot tier alone.
	HotFloor(ctx context.Context) (Floor, error)
	// Cold plans the cold files for the readings q selects: W of the
	// planned snapshot and local Parquet paths (see cold.Plan.Local).
	Cold(ctx context.Context, q series.Range) (cold.Plan, error)
	// ColdAt plans the cold files for q as Cold does, but in the past
	// snapshot ref names (see cold.Tier.PlanAt); an unknown one is an
	// error wrapping ErrNoSnapshot.
	ColdAt(ctx context.Context, q series.Range, ref cold.SnapshotRef) (cold.Plan, error)
	// ColdAlone plans q as Cold does without touching the hot tier's
	// database, for a historical read (ReadHistorical): what Cold checks
	// there (the watermark against the archival ledger, the files against
	// the record of altered ones) is not checked; a file's size is.
	ColdAlone(ctx context.Context, q series.Range) (cold.Plan, error)
}

// A Floor describes the hot tier's partitions for Source.HotFloor.
type Floor struct {
	// Detached is the end of the highest detached partition, the zero time
	// if none is detached: every hot row at or above it is in an attached
	// partition. Partitions are dropped only after their commit, so rows at
	// or above W that the hot scan missed are below Detached.
	Detached time.Time
	// Attached is the start of the lowest attached partition above every
	// detached one, if HasAttached: every row at or above it is in
	// PostgreSQL and none in the cold tier, whose rows all lie below W,
	// which lies at or below every attached partition. Without the cold
	// tier, only a range at or above it can be answered.
	Attached    time.Time
	HasAttached bool
}

// HotTier is what a TableSource reads of the hot tier; the hot tier's Tier
// provides it.
type HotTier interface {
	// Snapshot takes a snapshot of the hot tier (see Source.HotSnapshot).
	Snapshot(ctx context.Context, conns int) (HotSnapshot, error)
	// Read opens a HotRead of the rows of t in attached partitions that q
	// selects, in snap.
	Read(ctx context.Context, snap HotSnapshot, t *series.Table, q series.Range) (HotRead, error)
	// Floor returns where t's attached partitions vouch for its rows:
	// Floor.Detached and Floor.Attached, zero for none.
	Floor(ctx context.Context, t *series.Table) (detached, attached time.Time, err error)
}

// A SnapshotReader is a Source that takes a query's hot snapshot and
// opens the first HotRead in it in one step (one round trip, where
// HotSnapshot and HotRead take one each).
type SnapshotReader interface {
	HotSnapshotRead(ctx context.Context, conns int, q series.Range) (HotSnapshot, HotRead, error)
}

// A HotSnapshotReader is a HotTier that takes a snapshot and opens a
// Read in it in one step; see SnapshotReader.
type HotSnapshotReader interface {
	SnapshotRead(ctx context.Context, conns int, t *series.Table, q series.Range) (HotSnapshot, HotRead, error)
}

// A HotBesideReader is a HotSnapshotReader that reads a timestamp beside
// (see Vouch.Ledger) in the statement that takes the snapshot; has is
// false where it read none.
type HotBesideReader interface {
	SnapshotReadBeside(ctx context.Context, conns int, t *series.Table, q series.Range, beside func(arg func(any) string) string) (snap HotSnapshot, r HotRead, at time.Time, has bool, err error)
}

// A FoldingSource is a Source whose watermark's vetting can be folded into
// the statement that takes the hot snapshot, a round trip less: W read
// unvetted (FoldWatermark), then vetted by what that statement read
// (HotSnapshotReadVouched); where it does not vouch, the caller starts
// over with Watermark, which vets first.
type FoldingSource interface {
	// FoldWatermark returns W as Watermark does; folded says it is not
	// vetted yet and HotSnapshotReadVouched must vet it.
	FoldWatermark(ctx context.Context) (w time.Time, ok, folded bool, err error)
	// HotSnapshotReadVouched opens the snapshot and read as
	// HotSnapshotRead does if what the same statement read vouches for w
	// (ok false: none) as Watermark's vetting would; otherwise it opens
	// nothing, and vouched is false.
	HotSnapshotReadVouched(ctx context.Context, conns int, q series.Range, w time.Time, ok bool) (snap HotSnapshot, r HotRead, vouched bool, err error)
}

// Vouch folds a TableSource's VetWatermark into the hot snapshot (see
// FoldingSource).
type Vouch struct {
	// Ledger returns, once W was read, the scalar subquery that reads the
	// watermark that vets it, or exists false where there is no record to
	// vet by, which vouches for any W read before (an error: fold
	// nothing).
	Ledger func(ctx context.Context) (beside func(arg func(any) string) string, exists bool, err error)
	// Vouches reports whether lw (lok false: none), read after w, vouches
	// for w (hasW false: none).
	Vouches func(w time.Time, hasW bool, lw time.Time, lok bool) bool
	// Failed, if set, is told of an error of a snapshot that read the
	// ledger, before the read starts over without it.
	Failed func(err error)
}

// A TableSource is the Source of a declared table: its rows in the hot
// tier and its files in the cold tier.
type TableSource struct {
	HotTier   HotTier
	ColdTier  *cold.Tier
	Table     *series.Table
	ColdTable *cold.Table
	// Copies keeps the local copies of a remote warehouse's files.
	Copies *cold.Copies
	// Scanned, if set, is told the rows each hot read moved, when it
	// closes.
	Scanned func(ctx context.Context, rows int64)
	// VetWatermark, if set, reads every watermark of the cold tier with
	// read, of the current snapshot and of a planned one, and vets it (the
	// archival ledger first, then read); an error fails the read as if the
	// cold tier were unreachable.
	VetWatermark func(ctx context.Context, read func(context.Context) (time.Time, bool, error)) (time.Time, bool, error)
	// Vouch, if set with VetWatermark, folds the vetting of W into the
	// hot snapshot's statement where the hot tier can (HotBesideReader).
	Vouch *Vouch
	// Kept, if set with Keep, returns the cold state Keep kept last where
	// one statement read now vouches for it as VetWatermark's vetting of a
	// fresh load would: the log's head is still the commit it was loaded
	// from, and the archival ledger vouches for its W. Cold then plans in
	// it instead of loading the table again; ok false, it loads.
	Kept func(ctx context.Context) (l cold.Loaded, ok bool)
	// Keep, if set, is given each state Cold loaded and vetted.
	Keep func(l cold.Loaded)
	// VetPlan, if set, vets every cold plan, current or past, before a
	// file of it is read: it refuses one holding a file known not to be
	// the one its commit recorded (an error wrapping cold.ErrAltered).
	VetPlan func(ctx context.Context, p cold.Plan) error
	// CheckDigests reads every planned file whole before a query reads
	// it, and compares its SHA-256 with the digest its commit recorded
	// (see cold.Plan.CheckDigests): an altered file of the same size is
	// then refused too, at the cost of reading every file twice.
	CheckDigests bool
	// Altered, if set, is told of a cold file found not to be the one its
	// commit recorded: a planned data file as it was made local (missing,
	// or its size differs from the manifest's, or with CheckDigests its
	// SHA-256), or what the plan depends on (see cold.Tier.Plan); the
	// read fails with that error all the same.
	Altered func(ctx context.Context, err *cold.AlteredFileError)
}

var (
	_ Source         = (*TableSource)(nil)
	_ SnapshotReader = (*TableSource)(nil)
	_ FoldingSource  = (*TableSource)(nil)
)

// Watermark returns the cold table's W.
func (s *TableSource) Watermark(ctx context.Context) (time.Time, bool, error) {
	read := func(ctx context.Context) (time.Time, bool, error) {
		w, ok, err := s.ColdTier.Watermark(ctx, s.ColdTable)
		return w, ok, cold.Unavailable("read", s.Table.Name, err)
	}
	if s.VetWatermark == nil {
		return read(ctx)
	}
	w, ok, err := s.VetWatermark(ctx, read)
	if err != nil {
		return time.Time{}, false, err
	}
	return w, ok, nil
}

// FoldWatermark returns the cold table's W, unvetted (folded) where
// Vouch and the hot tier can vet it in the hot snapshot.
func (s *TableSource) FoldWatermark(ctx context.Context) (time.Time, bool, bool, error) {
	if _, can := s.HotTier.(HotBesideReader); !can || s.Vouch == nil || s.VetWatermark == nil {
		w, ok, err := s.Watermark(ctx)
		return w, ok, false, err
	}
	w, ok, err := s.ColdTier.Watermark(ctx, s.ColdTable)
	if err != nil {
		return time.Time{}, false, false, cold.Unavailable("read", s.Table.Name, err)
	}
	switch _, exists, err := s.Vouch.Ledger(ctx); {
	case err != nil:
		w, ok, err := s.Watermark(ctx)
		return w, ok, false, err
	case !exists:
		return w, ok, false, nil
	}
	return w, ok, true, nil
}

// HotSnapshotReadVouched opens the hot snapshot and read of q in one
// statement that reads the ledger too, and reports whether it vouches for
// w. Where it cannot (Vouch.Failed is told of an error of that statement)
// it opens nothing and vouches for nothing: the caller starts over.
func (s *TableSource) HotSnapshotReadVouched(ctx context.Context, conns int, q series.Range, w time.Time, ok bool) (HotSnapshot, HotRead, bool, error) {
	br, can := s.HotTier.(HotBesideReader)
	if !can || s.Vouch == nil {
		return nil, nil, false, nil
	}
	beside, exists, err := s.Vouch.Ledger(ctx)
	if err != nil || !exists {
		return nil, nil, false, nil
	}
	snap, r, lw, lok, err := br.SnapshotReadBeside(ctx, conns, s.Table, q, beside)
	if err != nil {
		if s.Vouch.Failed != nil {
			s.Vouch.Failed(err)
		}
		return nil, nil, false, nil
	}
	if !s.Vouch.Vouches(w, ok, lw, lok) {
		return nil, nil, false, snap.Close()
	}
	hr, _ := s.scanned(ctx, r, nil)
	return snap, hr, true, nil
}

// HotSnapshot takes a snapshot of the hot tier.
func (s *TableSource) HotSnapshot(ctx context.Context, conns int) (HotSnapshot, error) {
	return s.HotTier.Snapshot(ctx, conns)
}

// HotRead opens a read of the hot rows q selects in snap.
func (s *TableSource) HotRead(ctx context.Context, snap HotSnapshot, q series.Range) (HotRead, error) {
	r, err := s.HotTier.Read(ctx, snap, s.Table, q)
	return s.scanned(ctx, r, err)
}

// HotSnapshotRead takes a snapshot of the hot tier and opens the read of
// the hot rows q selects in it: in one step if the hot tier can
// (HotSnapshotReader).
func (s *TableSource) HotSnapshotRead(ctx context.Context, conns int, q series.Range) (HotSnapshot, HotRead, error) {
	sr, ok := s.HotTier.(HotSnapshotReader)
	if !ok {
		snap, err := s.HotSnapshot(ctx, conns)
		if err != nil {
			return nil, nil, err
		}
		r, err := s.HotRead(ctx, snap, q)
		if err != nil {
			return nil, nil, errors.Join(err, snap.Close())
		}
		return snap, r, nil
	}
	snap, r, err := sr.SnapshotRead(ctx, conns, s.Table, q)
	if err != nil {
		return nil, nil, err
	}
	hr, _ := s.scanned(ctx, r, nil)
	return snap, hr, nil
}

// scanned returns r, which err opened, telling Scanned of its rows, if set.
func (s *TableSource) scanned(ctx context.Context, r HotRead, err error) (HotRead, error) {
	if err != nil || s.Scanned == nil {
		return r, err
	}
	return scanned{HotRead: r, ctx: context.WithoutCancel(ctx), fn: s.Scanned}, nil
}

// scanned tells fn the rows a read moved when it closes.
type scanned struct {
	HotRead
	ctx context.Context
	fn  func(ctx context.Context, rows int64)
}

// SnapshotFloor passes on the read's own, if it knows one.
func (s scanned) SnapshotFloor() (Floor, bool) {
	if fr, ok := s.HotRead.(FlooredRead); ok {
		return fr.SnapshotFloor()
	}
	return Floor{}, false
}

// DayColumns passes on the read's own, if it sums days.
func (s scanned) DayColumns() ([]HotColumn, bool) {
	if dr, ok := s.HotRead.(HotDayRead); ok {
		return dr.DayColumns()
	}
	return nil, false
}

// ScanDays passes on to the read's own; DayColumns says whether it has
// one.
func (s scanned) ScanDays(ctx context.Context, unit int, lo time.Time, cols []int) (HotCursor, error) {
	dr, ok := s.HotRead.(HotDayRead)
	if !ok {
		return nil, errors.New("query: the hot read sums no days")
	}
	return dr.ScanDays(ctx, unit, lo, cols)
}

// DayTokens passes on the read's own, none if it has none.
func (s scanned) DayTokens(ctx context.Context, lo time.Time) ([]DayToken, error) {
	if dt, ok := s.HotRead.(HotDayTokens); ok {
		return dt.DayTokens(ctx, lo)
	}
	return nil, nil
}

// SkipDays passes on to the read's own, if it has tokens.
func (s scanned) SkipDays(units []int) bool {
	if dt, ok := s.HotRead.(HotDayTokens); ok {
		return dt.SkipDays(units)
	}
	return true
}

func (s scanned) Close() error {
	err := s.HotRead.Close()
	n, _, _ := s.Moved()
	s.fn(s.ctx, n)
	return err
}

// HotFloor returns the hot tier's Floor.
func (s *TableSource) HotFloor(ctx context.Context) (Floor, error) {
	detached, attached, err := s.HotTier.Floor(ctx, s.Table)
	if err != nil {
		return Floor{}, err
	}
	return Floor{Detached: detached, Attached: attached, HasAttached: !attached.IsZero()}, nil
}

// Cold plans the cold files q selects, vets them and makes them local:
// in the state kept from an earlier plan where Kept vouches for it, else
// in a state loaded now.
func (s *TableSource) Cold(ctx context.Context, q series.Range) (cold.Plan, error) {
	if s.Kept != nil && s.Keep != nil {
		if l, ok := s.Kept(ctx); ok {
			p, err := s.ColdTier.PlanIn(ctx, s.ColdTable, l, q)
			if err != nil {
				return cold.Plan{}, s.found(ctx, err)
			}
			return s.local(ctx, p)
		}
	}
	var (
		p cold.Plan
		l cold.Loaded
	)
	plan := func(ctx context.Context) (time.Time, bool, error) {
		var err error
		if l, err = s.ColdTier.Load(ctx, s.ColdTable); err != nil {
			return time.Time{}, false, err
		}
		p, err = s.ColdTier.PlanIn(ctx, s.ColdTable, l, q)
		return p.Watermark, p.HasWatermark, err
	}
	var err error
	if s.VetWatermark == nil {
		_, _, err = plan(ctx)
	} else {
		_, _, err = s.VetWatermark(ctx, plan)
	}
	if err != nil {
		return cold.Plan{}, s.found(ctx, err)
	}
	if s.Keep != nil {
		s.Keep(l)
	}
	return s.local(ctx, p)
}

// ColdAlone plans the cold files q selects and makes them local, touching
// nothing in the hot tier's database.
func (s *TableSource) ColdAlone(ctx context.Context, q series.Range) (cold.Plan, error) {
	p, err := s.ColdTier.Plan(ctx, s.ColdTable, q)
	if err != nil {
		return cold.Plan{}, s.found(ctx, err)
	}
	lp, err := p.Local(ctx, s.Copies)
	if err == nil && s.CheckDigests {
		err = p.CheckDigests(ctx, lp)
	}
	return lp, s.found(ctx, err)
}

// ColdAt plans the cold files q selects in the snapshot ref names, vets
// them and makes them local. VetWatermark does not vet its watermark: a
// past W lies below the current one by nature.
func (s *TableSource) ColdAt(ctx context.Context, q series.Range, ref cold.SnapshotRef) (cold.Plan, error) {
	p, err := s.ColdTier.PlanAt(ctx, s.ColdTable, q, ref)
	if err != nil {
		return cold.Plan{}, s.found(ctx, err)
	}
	return s.local(ctx, p)
}

// local vets p with VetPlan and makes its files local, telling Altered of a
// file found altered meanwhile.
func (s *TableSource) local(ctx context.Context, p cold.Plan) (cold.Plan, error) {
	if s.VetPlan != nil && len(p.Files) > 0 {
		if err := s.VetPlan(ctx, p); err != nil {
			return cold.Plan{}, err
		}
	}
	lp, err := p.Local(ctx, s.Copies)
	if err == nil && s.CheckDigests {
		err = p.CheckDigests(ctx, lp)
	}
	return lp, s.found(ctx, err)
}

// found tells Altered of a cold file that err reports not to be the one
// its commit recorded (a data file, or a metadata file, digest index,
// manifest list or manifest its plan depends on), and returns err; an
// error that says the cold tier cannot be reached, retryably (see
// cold.Unavailable).
func (s *TableSource) found(ctx context.Context, err error) error {
	var altered *cold.AlteredFileError
	if errors.As(err, &altered) && s.Altered != nil {
		s.Altered(ctx, altered)
	}
	return cold.Unavailable("read", s.Table.Name, err)
}

// A HotSnapshot is one consistent state of the hot tier for a query: one
// snapshot of PostgreSQL that every connection reading for the query
// shares, so that the tables' partitions may be read in parallel and
// still agree with each other and with the watermarks read around it.
// Close ends it, and every HotRead in it, once no cursor is used any more.
type HotSnapshot interface {
	Close() error
}

// A HotRead is one table's rows in a HotSnapshot: the rows of the
// partitions attached when it was taken. Its rows cross column by column,
// only the columns a cursor asks for. Close says it is no longer used; its
// snapshot's Close ends it.
type HotRead interface {
	// Shape says how the read presents the table's readings.
	Shape() HotShape
	// Units returns in how many parts relation rel is read: the rows
	// (rel 0), a dictionary (rel i, Shape().Dicts[i-1]).
	Units(rel int) int
	// Scan opens a cursor over part unit of relation rel with the
	// relation's columns cols, in that order; with winners, one over the
	// rows hands over only the newest version of each merge key (see
	// HotShape.Resolves).
	Scan(ctx context.Context, rel, unit int, cols []int, winners bool) (HotCursor, error)
	// Moved returns the rows the cursors received, their bytes, and the
	// time from the first batch asked for to the last one received.
	Moved() (rows, bytes int64, span time.Duration)
	Close() error
}

// A HotDayRead is a HotRead whose hot tier sums the resolved rows of each
// series and day itself, so that a row a day crosses instead of the day's
// readings (see the relation daily).
type HotDayRead interface {
	HotRead
	// DayColumns returns the columns of the day sums: the series,
	// balancing_day, sparte, resolution, unit, then daily's counts,
	// value_sum (at scale 6, NULL where the sum does not fit
	// numeric(18,6)) and value_sum_text (the sum as text there),
	// max_version and max_recorded_at; ok is false where the read sums
	// none.
	DayColumns() (cols []HotColumn, ok bool)
	// ScanDays opens a cursor over the day sums of the resolved rows of
	// part unit of the rows (see Units) from lo on, with the columns cols.
	// A day the parts or lo cut comes as partial sums.
	ScanDays(ctx context.Context, unit int, lo time.Time, cols []int) (HotCursor, error)
}

// A HotDayTokens is a HotDayRead whose stored day sums carry tokens: a
// copy of a unit's sums read under a token serves every read that shows
// the unit the same token (see hotdays.go).
type HotDayTokens interface {
	// DayTokens returns the tokens of the units whose day sums from lo
	// on are the stored sums of their whole partition, in the read's
	// snapshot.
	DayTokens(ctx context.Context, lo time.Time) ([]DayToken, error)
	// SkipDays says the caller reads the day sums of units elsewhere:
	// ScanDays hands over none of theirs. It precedes every ScanDays,
	// and reports whether a unit is left that ScanDays may hand over
	// sums of.
	SkipDays(units []int) (more bool)
}

// A DayToken names the stored day sums of one unit of a HotDayTokens.
type DayToken struct {
	Unit     int
	From, To time.Time // the unit's partition; To is zero for none
	Token    string
}

// A FlooredRead is a HotRead that knows its table's Floor as of its
// snapshot, listed with the partitions it reads (ok), so that the engine
// need not read the floor again to vouch for the read: every row at or
// above Floor.Detached was in a partition the snapshot saw attached, and
// is read.
type FlooredRead interface {
	HotRead
	SnapshotFloor() (f Floor, ok bool)
}

// A HotCursor hands over the rows of one part of a relation of a
// HotRead, column by column: after Next, the current row's values by
// their column's position among those asked for, as the column's
// HotKind says. Bytes is valid until the next call of Next.
type HotCursor interface {
	Next(ctx context.Context) bool
	Null(i int) bool
	Int64(i int) int64
	Uint64(i int) uint64
	Bytes(i int) []byte
	// Err returns the error that ended the cursor, if any.
	Err() error
	Close() error
}

// A HotShape is how a HotRead presents a table's readings: a relation of
// rows and the dictionaries whose ids the rows carry, if any. Each of the
// table's columns is a column of the same name of one of the relations.
type HotShape struct {
	Rows  HotRelation
	Dicts []HotDict
	// Series names the column of the rows whose value, with from, stands
	// for the merge key; "" if none: the merge key's columns are the
	// rows' own.
	Series string
	// Resolves is true if Scan can hand over the winning versions alone,
	// and versions are unique per merge key: no recorded_at decides.
	Resolves bool
}

// A HotRelation is a relation of a HotRead: its columns and an estimate
// of its rows, negative if unknown.
type HotRelation struct {
	Columns []HotColumn
	Rows    int64
}

// A HotDict is a dictionary of a HotShape: its id column ID, and the
// column of the rows holding an id of it, Ref.
type HotDict struct {
	HotRelation
	ID, Ref string
}

// A HotColumn is a column of a HotRelation.
type HotColumn struct {
	Name string
	Kind HotKind
}

// A HotKind says how a HotCursor hands over a column's values.
type HotKind uint8

// The kinds of values. All but KindText and KindUint64 come as Int64.
const (
	KindText    HotKind = iota + 1 // Bytes
	KindInt32                      // an int32
	KindInt64                      // an int64
	KindTime                       // microseconds since the Unix epoch
	KindDate                       // days since the Unix epoch
	KindDecimal                    // the unscaled value of a DECIMAL(18,6)
	KindUint64                     // Uint64
)
