package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/internal/query"
)

// A TableStatus is one row of system.tables: the health of one table.
type TableStatus struct {
	Table        string
	Watermark    time.Time // zero when nothing is archived yet
	HasWatermark bool
	// WatermarkFromLedger tells that the cold tier could not be read, so
	// Watermark is the one the archival ledger recorded as committed:
	// the one writes are routed by meanwhile. The table is unhealthy,
	// and Err says why.
	WatermarkFromLedger bool
	// WatermarkLag is now minus the watermark; zero without one.
	WatermarkLag time.Duration
	// HotPartitions counts the attached partitions and PartitionsAhead
	// those that can still take a row written at now or later; -1 when
	// they could not be listed.
	HotPartitions, PartitionsAhead int64
	// InvariantViolations counts the rows in PostgreSQL below the
	// watermark; -1 when the watermark could not be read.
	InvariantViolations int64
	// MirrorForks counts the commits MeterStore did not make found in the
	// table's Hadoop-layout metadata mirror (see catalog.Fork), each named
	// by Err; -1 when the check could not run; 0 for a catalog that
	// writes no mirror.
	MirrorForks int64
	// AlteredFiles counts the cold data files found not to be the files
	// their commits recorded (see Verify, and a read that found one of
	// another size), each named by Err; reads refuse them. -1 when they
	// could not be looked up.
	AlteredFiles int64
	// Healthy is false when a count is -1, a row lies below the
	// watermark, the mirror holds a fork, a data file is altered, a
	// partition the watermark does
	// not cover was detached other than by an archival, or the table has
	// partitions and none ahead of now. A
	// table without any partition is exempt from the last rule: "not
	// started" is not "exhausted".
	Healthy bool
	// Err is why a count could not be computed, or why the table is
	// unhealthy though they could: it cannot be opened (a
	// *TableOpenError), its schema is quarantined (a *QuarantineError),
	// or its catalog shows a lower watermark than the archival ledger
	// recorded (an *InvariantError naming both), or its mirror holds a
	// fork (a *catalog.ForkError naming the files), or a partition above
	// the watermark was detached by hand (an *InvariantError naming it),
	// or a data file is altered (an *AlteredFileError naming it, wrapping
	// ErrAlteredFile).
	Err error

	quarantined bool
	mirrored    bool // MirrorForks was checked, or tried
}

// Status computes the state of every table at now, as system.tables
// reports it.
//
// A now that cannot be the time (see CheckNow) or is before a table's
// watermark makes the table's status an error: unhealthy, never a
// negative lag.
func (s *Store) Status(ctx context.Context, now time.Time) []TableStatus {
	out := make([]TableStatus, len(s.tables))
	for i, t := range s.tables {
		out[i] = s.statusOf(ctx, t, now)
	}
	return out
}

// refusedStatus is the status of table name at a now that was refused.
func refusedStatus(name string, err error) TableStatus {
	return TableStatus{Table: name, HotPartitions: -1, PartitionsAhead: -1, InvariantViolations: -1, MirrorForks: -1, AlteredFiles: -1, Err: err}
}

// statusOf computes the status of t and records it in the metrics.
func (s *Store) statusOf(ctx context.Context, t *table, now time.Time) TableStatus {
	st := s.status(ctx, t, now)
	s.metrics.PartitionsAhead(ctx, st.Table, st.PartitionsAhead)
	s.metrics.InvariantViolations(ctx, st.Table, st.InvariantViolations)
	s.metrics.Healthy(ctx, st.Table, st.Healthy)
	if st.mirrored {
		s.metrics.MirrorForks(ctx, st.Table, st.MirrorForks)
	}
	if st.HasWatermark {
		s.metrics.Watermark(ctx, st.Table, st.WatermarkLag)
	}
	return st
}

func (s *Store) status(ctx context.Context, t *table, now time.Time) TableStatus {
	if err := s.CheckNow(now); err != nil {
		return refusedStatus(t.decl.Name, err)
	}
	st := TableStatus{Table: t.decl.Name, HotPartitions: -1, PartitionsAhead: -1, InvariantViolations: -1}
	var errs []error
	parts, perr := s.hot.Partitions(ctx, t.decl)
	if perr != nil {
		errs = append(errs, perr)
	} else {
		st.HotPartitions, st.PartitionsAhead = 0, 0
		for _, p := range parts {
			if !p.Attached {
				continue
			}
			st.HotPartitions++
			if p.To.After(now) {
				st.PartitionsAhead++
			}
		}
	}
	var err error
	ct, _, err := s.ready(ctx, t)
	if err == nil {
		s.retryColdNow(ctx, t)
	}
	decl, quarantine := t.running()
	if quarantine != nil {
		// The hot tier refused the declaration's change of columns: the
		// table ingests and answers on its stored columns, and archives
		// nothing, until an operator resolves it.
		errs = append(errs, quarantine)
		st.quarantined = true
	}
	coldDown := false
	if err == nil {
		// A log that lost its newest entries shows a W that went back:
		// report the one found, and the one the ledger vouches for.
		if err = t.coldState(); err == nil {
			st.Watermark, st.HasWatermark, err = s.arch.VetWatermark(ctx, t.decl.Name, func(ctx context.Context) (time.Time, bool, error) {
				return s.cold.Watermark(ctx, ct)
			})
		}
		var inv *InvariantError
		if err != nil && !errors.As(err, new(*cold.AlteredFileError)) && !errors.As(err, &inv) {
			// The cold tier cannot be read: the watermark the ledger
			// recorded, which writes are routed by meanwhile, marked as
			// such; the hot tier is still counted below it.
			if lw, ok, lerr := s.arch.RecordedWatermark(ctx, t.decl.Name); lerr == nil {
				st.Watermark, st.HasWatermark, st.WatermarkFromLedger = lw, ok, true
				errs = append(errs, cold.Unavailable("read the watermark of", t.decl.Name, err))
				err, coldDown = nil, true
			}
		}
	}
	if err == nil && ct != nil && !coldDown {
		// A snapshot whose manifests are not the committed ones is
		// refused by every read, and a data file gone or resized by every
		// read that needs it: found here, once per proof of the snapshot
		// (see cold.Tier.CheckFiles), without waiting for a read or a
		// verification.
		if cerr := s.cold.CheckFiles(ctx, ct); cerr != nil && !errors.As(cerr, new(*cold.AlteredFileError)) {
			errs = append(errs, cerr)
		} else {
			err = cerr
		}
	}
	// The metadata file, digest index, manifest list or a manifest is not
	// the committed one: recorded, so that every process refuses the
	// table, and reported below with the other findings.
	var altered *cold.AlteredFileError
	if errors.As(err, &altered) {
		s.noteAltered(ctx, t.decl.Name, altered)
		if st.HasWatermark {
			// Below a watermark read intact: the hot tier is still
			// counted.
			err = nil
		}
	}
	switch {
	case coldDown:
		st.MirrorForks = -1 // cannot say
	case ct != nil:
		if ferr := s.checkMirror(ctx, t, ct, &st); ferr != nil {
			errs = append(errs, ferr)
		}
	}
	if err == nil && !coldDown {
		// A quarantined table ingests and answers, and archives nothing.
		var q *cold.QuarantineError
		if derr := s.cold.CheckDrift(ctx, decl); errors.As(derr, &q) {
			errs = append(errs, derr)
			st.quarantined = true
		}
	}
	switch {
	case err != nil && (altered == nil || errors.As(err, new(*TableOpenError))):
		errs = append(errs, err)
	case err != nil:
		// The metadata file: reported with the findings.
	case !st.HasWatermark:
		st.InvariantViolations = 0
	case now.Before(st.Watermark):
		errs = append(errs, beforeWatermark(t.decl.Name, now, st.Watermark))
	default:
		st.WatermarkLag = now.Sub(st.Watermark)
		if st.InvariantViolations, err = s.hot.CountBelow(ctx, t.decl, st.Watermark); err != nil {
			st.InvariantViolations = -1
			errs = append(errs, err)
		} else if st.InvariantViolations > 0 {
			errs = append(errs, s.rowsBelow(t, parts, st.Watermark, st.InvariantViolations))
		}
	}
	// A partition someone else detached above W holds rows no query
	// reads, and archival stops below it until an operator acts.
	stray := false
	if perr == nil && err == nil {
		found, derr := s.arch.CheckDetached(ctx, t.decl, parts, st.Watermark, st.HasWatermark)
		if derr != nil {
			found = append(found, fmt.Errorf("detached partitions: %w", derr))
		}
		errs = append(errs, found...)
		stray = len(found) > 0
	}
	// A data file found altered is refused by every read: the table
	// cannot answer for its rows until an operator restores the file.
	if ct != nil && altered == nil && !coldDown {
		s.reprove(ctx, t.decl.Name, ct)
	}
	var aerr error
	if st.AlteredFiles, aerr = s.altered.Status(ctx, t.decl.Name); aerr != nil {
		errs = append(errs, aerr)
	}
	if altered != nil && st.AlteredFiles == 0 {
		// Not recorded after all: still not fine.
		st.AlteredFiles = -1
		errs = append(errs, altered)
	}
	// A table without any partition has not started; it is not exhausted.
	notStarted := perr == nil && len(parts) == 0
	st.Healthy = st.HotPartitions >= 0 && st.InvariantViolations == 0 && !stray &&
		(st.PartitionsAhead > 0 || notStarted) && !st.quarantined && st.MirrorForks == 0 && st.AlteredFiles == 0
	if len(errs) > 0 {
		st.Err = fmt.Errorf("store: status of %s: %w", t.decl.Name, errors.Join(errs...))
	}
	return st
}

// checkMirror looks for forks in the metadata mirror of t the cheap way
// (catalog.CheckMirror) and logs each one it finds with its file: a
// foreign commit in the mirror is seen by Hadoop-layout readers and by no
// MeterStore query, and only an operator can settle which one is right.
func (s *Store) checkMirror(ctx context.Context, t *table, ct *cold.Table, st *TableStatus) error {
	mc := catalog.MirrorOf(s.opts.Catalog)
	if mc == nil {
		return nil
	}
	st.mirrored = true
	err := mc.CheckMirror(ctx, ct.Identifier())
	var fe *catalog.ForkError
	switch {
	case errors.As(err, &fe):
		st.MirrorForks = int64(len(fe.Forks))
	case err != nil:
		st.MirrorForks = -1
	}
	// Status runs on every readiness probe: a fork is logged when it is
	// found, not on every look; status and the metric keep showing it.
	var files []string
	if fe != nil {
		for _, f := range fe.Forks {
			files = append(files, f.File)
		}
	}
	seen := strings.Join(files, "\n")
	t.mu.Lock()
	changed := t.forks != seen
	t.forks = seen
	t.mu.Unlock()
	if changed && fe != nil {
		for _, f := range fe.Forks {
			msg := "store: a commit MeterStore did not make is in the metadata mirror; " +
				"the mirror of the table stops until an operator resolves it (meterstore verify --resolve-forks)"
			if f.Lost {
				msg = "store: the catalog's log lost commits it made, as a database restored from a backup loses them; " +
					"the mirror of the table stops until an operator moves their copies aside (meterstore verify --resolve-forks)"
			}
			s.log.Error(msg, "table", t.decl.Name, "file", f.File, "reason", f.Reason, "snapshot", f.SnapshotID, "records", f.Records)
		}
	}
	if changed && fe == nil && err == nil {
		s.log.Info("store: the metadata mirror holds no fork any more", "table", t.decl.Name)
	}
	return err
}

// DefaultSystemTablesMaxAge is QueryOptions.SystemTablesMaxAge when it is
// zero: how old the system tables a statement that names them sees may be.
// One older is computed anew first, at the wall clock, so that every
// protocol shows them fresh and a poller costs a status round trip per
// table this often at most.
const DefaultSystemTablesMaxAge = 10 * time.Second

// systemMaxAge returns QueryOptions.SystemTablesMaxAge or its default.
func (s *Store) systemMaxAge() time.Duration {
	if a := s.opts.Query.SystemTablesMaxAge; a > 0 {
		return a
	}
	return DefaultSystemTablesMaxAge
}

// RefreshSystemTables recomputes the system tables at now: system.tables,
// system.config, system.resolution and system.snapshots. A statement that
// names them computes them itself when they are older than
// SystemTablesMaxAge; this computes them at another now, such as a
// command's --now.
func (s *Store) RefreshSystemTables(ctx context.Context, now time.Time) error {
	return s.publishSystemTables(ctx, s.Status(ctx, now))
}

// systemTables returns the system tables for a statement, first computed
// anew at the wall clock if they never were, or if fresh is set and they
// are older than SystemTablesMaxAge. A failure to compute them leaves the last copy, and
// is logged: the statement still runs.
func (s *Store) systemTables(ctx context.Context, fresh bool) []query.Relation {
	stale := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.system == nil || s.opts.Now.wall().Sub(s.systemAt) >= s.systemMaxAge()
	}
	if (fresh || s.neverComputed()) && stale() {
		s.refreshing.Lock()
		if stale() { // not done by a statement that waited before this one
			if err := s.RefreshSystemTables(ctx, s.opts.Now.wall()); err != nil {
				s.log.Warn("store: system tables computed in part", "err", err)
			}
		}
		s.refreshing.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.system
}

// lastSystemTables returns the system tables as last computed, nil if
// they never were.
func (s *Store) lastSystemTables() []query.Relation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.system
}

func (s *Store) neverComputed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.system == nil
}

// publishSystemTables makes every engine see the system tables with sts as
// system.tables.
func (s *Store) publishSystemTables(ctx context.Context, sts []TableStatus) error {
	rels := []query.Relation{s.tablesRelation(sts), s.configRelation(ctx), s.resolutionRelation()}
	snaps, err := s.snapshotsRelation(ctx)
	rels = append(rels, snaps)
	s.mu.Lock()
	s.system, s.systemAt = rels, s.opts.Now.wall()
	s.mu.Unlock()
	s.engine.SetRelations(rels)
	return err
}

func (s *Store) tablesRelation(sts []TableStatus) query.Relation {
	r := query.Relation{Schema: "system", Name: "tables", Columns: []query.Column{
		{Name: "table", Type: "VARCHAR"}, {Name: "watermark", Type: "TIMESTAMPTZ"},
		{Name: "watermark_lag_seconds", Type: "BIGINT"}, {Name: "hot_partitions", Type: "BIGINT"},
		{Name: "partitions_ahead", Type: "BIGINT"}, {Name: "invariant_violations", Type: "BIGINT"},
		{Name: "healthy", Type: "BOOLEAN"}, {Name: "error", Type: "VARCHAR"},
		{Name: "altered_files", Type: "BIGINT"}, {Name: "watermark_source", Type: "VARCHAR"},
	}}
	for _, st := range sts {
		var w, lag, msg, source any
		if st.HasWatermark {
			w, lag, source = st.Watermark, int64(st.WatermarkLag/time.Second), "catalog"
			if st.WatermarkFromLedger {
				source = "ledger"
			}
		}
		if st.Err != nil {
			msg = st.Err.Error()
		}
		r.Rows = append(r.Rows, []any{st.Table, w, lag, st.HotPartitions, st.PartitionsAhead,
			st.InvariantViolations, st.Healthy, msg, st.AlteredFiles, source})
	}
	return r
}

// configRelation sets the settings that interact side by side, one row
// per table: a settlement lag shorter than the step is valid alone and
// wrong beside it.
func (s *Store) configRelation(ctx context.Context) query.Relation {
	r := query.Relation{Schema: "system", Name: "config", Columns: []query.Column{
		{Name: "table", Type: "VARCHAR"}, {Name: "partition_width", Type: "VARCHAR"},
		{Name: "headroom", Type: "VARCHAR"}, {Name: "settlement_lag", Type: "VARCHAR"},
		{Name: "archival_step", Type: "VARCHAR"}, {Name: "max_windows_per_cycle", Type: "BIGINT"},
		{Name: "reader_grace", Type: "VARCHAR"}, {Name: "ddl_lock_timeout", Type: "VARCHAR"},
		{Name: "integrity", Type: "VARCHAR"}, {Name: "consistent", Type: "BOOLEAN"},
		{Name: "problem", Type: "VARCHAR"},
	}}
	a := s.archive
	for _, t := range s.tables {
		var problem any
		if err := a.ValidateFor(t.decl.Width); err != nil {
			problem = err.Error()
		}
		var integrity any
		if i, err := s.hot.Integrity(ctx, t.decl); err == nil {
			integrity = i.String()
		}
		r.Rows = append(r.Rows, []any{t.decl.Name, t.decl.Width.String(), fmtDuration(t.decl.Headroom),
			fmtDuration(a.SettlementLag), fmtDuration(a.Step), int64(a.MaxWindows()),
			fmtDuration(a.ReaderGrace), fmtDuration(s.hot.LockTimeout()), integrity,
			problem == nil, problem})
	}
	return r
}

func quoteAll(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = `"` + strings.ReplaceAll(n, `"`, `""`) + `"`
	}
	return out
}

// fmtDuration spells d as a configuration does.
func fmtDuration(d time.Duration) string { return config.Duration(d).String() }

// rowsBelow explains the n rows PostgreSQL holds below W in t's attached
// partitions parts: what a database restored from a backup older than the
// last archivals brings back (see archive's reconcile), logged when first
// seen.
func (s *Store) rowsBelow(t *table, parts []hot.Partition, w time.Time, n int64) error {
	var names []string
	for _, p := range parts {
		if p.Attached && !p.To.After(w) {
			names = append(names, p.Name)
		}
	}
	reason := fmt.Sprintf("%d rows in PostgreSQL lie below the watermark %s, in the attached partitions %s: "+
		"what a database restored from a backup older than the last archivals brings back. Queries do not read them; "+
		"the next archival cycle detaches each partition whose rows the cold tier holds, and keeps and reports any other",
		n, cold.FormatTime(w), strings.Join(names, ", "))
	seen := strings.Join(names, ",")
	t.mu.Lock()
	changed := t.below != seen
	t.below = seen
	t.mu.Unlock()
	if changed {
		s.log.Warn("store: rows below the watermark in PostgreSQL", "table", t.decl.Name, "rows", n, "partitions", names)
	}
	return &InvariantError{Table: t.decl.Name, Reason: reason}
}
