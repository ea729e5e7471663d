package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/meterstore/meterstore/internal/archive"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/privacy"
)

// DefaultMaintenanceInterval is the time between maintenance cycles.
const DefaultMaintenanceInterval = 15 * time.Minute

// RetentionName is the name under which a failed retention sweep appears
// among a cycle's failures.
const RetentionName = "<retention>"

// Maintenance configures the maintenance loop of a Store: build it with
// Store.Maintenance, then run one cycle with Cycle or a loop with Start.
// Nothing runs until then.
type Maintenance struct {
	s          *Store
	interval   time.Duration
	expire     bool
	compact    *CompactOptions // nil: off
	retention  privacy.Retention
	legalBasis string
	actor      string
	clock      func() time.Time

	mu      sync.Mutex // guards orphans' record, for cycles run at once
	orphans orphanSchedule
}

// Maintenance returns a loop for every table of s, visited one after
// another: twenty archivals at once would turn a background job into a
// load spike on the database it exists to relieve.
func (s *Store) Maintenance() *Maintenance {
	return &Maintenance{s: s, interval: DefaultMaintenanceInterval, clock: time.Now,
		compact: &CompactOptions{ManifestsOver: DefaultCompactManifestsOver, SmallFilesOver: DefaultCompactSmallFilesOver, Settled: true}}
}

// Interval sets the time between the starts of two cycles.
func (m *Maintenance) Interval(d time.Duration) *Maintenance { m.interval = d; return m }

// ExpireSnapshots turns snapshot expiry on or off (off by default: a
// snapshot is what makes a past settlement reproducible).
func (m *Maintenance) ExpireSnapshots(on bool) *Maintenance { m.expire = on; return m }

// Compact sets when a cycle compacts a table's cold tier (see
// Store.Compact): when it crosses one of the thresholds of opts, which must
// set at least one, and, with opts.Settled, when a month partition that no
// archival window reaches again holds small files. It is on by default,
// with DefaultCompactManifestsOver, DefaultCompactSmallFilesOver and
// Settled: the check reads the table's manifests, which compaction keeps
// few. on false turns it off.
func (m *Maintenance) Compact(on bool, opts CompactOptions) *Maintenance {
	m.compact = nil
	if on {
		if opts.ManifestsOver == 0 && opts.SmallFilesOver == 0 {
			opts.ManifestsOver, opts.SmallFilesOver = DefaultCompactManifestsOver, DefaultCompactSmallFilesOver
		}
		m.compact = &opts
	}
	return m
}

// AnonymiseAfter turns on the retention sweep of the subject registry,
// recorded under legalBasis and actor. It is off by default: destroying a
// linkage cannot be undone.
func (m *Maintenance) AnonymiseAfter(r privacy.Retention, legalBasis, actor string) *Maintenance {
	m.retention, m.legalBasis, m.actor = r, legalBasis, actor
	return m
}

// Clock sets where Start reads the time; Cycle takes it as a parameter.
func (m *Maintenance) Clock(now func() time.Time) *Maintenance { m.clock = now; return m }

// A TableOutcome is one table's row of a maintenance cycle.
type TableOutcome struct {
	Table   string
	Archive ArchiveOutcome
	// Expired is what snapshot expiry did, when it ran.
	Expired *Expiry
	// Orphans is what orphan removal found and deleted, when it ran.
	Orphans *OrphanReport
	// Compacted is what compaction did, when it committed.
	Compacted *Compaction
	// PartitionsDeferred reports that creating the partitions ahead gave
	// up on a lock another session held (see HotOptions.DDLLockTimeout):
	// a benign no-op that the next cycle tries again.
	PartitionsDeferred bool
	// Status is the table's health after the cycle.
	Status TableStatus
	// Err is the first error of the table's cycle; the cycle went on with
	// the next table.
	Err error
}

// Healthy reports whether the table needs no operator.
func (t *TableOutcome) Healthy() bool {
	return t.Err == nil && t.Archive.Healthy() && t.Status.Healthy
}

// A RetentionOutcome reports the retention sweep of a cycle.
type RetentionOutcome struct {
	Removed int64
	// LeaseContended reports that another replica held the sweep's lease:
	// this cycle swept nothing and recorded nothing, which is no failure.
	LeaseContended bool
	Err            error
}

// A MaintenanceOutcome reports one maintenance cycle: a row per table, and the
// retention sweep if it ran.
type MaintenanceOutcome struct {
	At        time.Time
	Tables    []TableOutcome
	Retention *RetentionOutcome
}

// A MaintenanceFailure names what failed in a cycle: a table, or RetentionName.
type MaintenanceFailure struct {
	Name string
	Err  error
}

// Unhealthy returns the tables that need an operator.
func (o *MaintenanceOutcome) Unhealthy() []TableOutcome {
	var out []TableOutcome
	for _, t := range o.Tables {
		if !t.Healthy() {
			out = append(out, t)
		}
	}
	return out
}

// Failures returns what ended with an error: tables, then the sweep.
func (o *MaintenanceOutcome) Failures() []MaintenanceFailure {
	var out []MaintenanceFailure
	for _, t := range o.Tables {
		if t.Err != nil {
			out = append(out, MaintenanceFailure{Name: t.Table, Err: t.Err})
		}
	}
	if o.Retention != nil && o.Retention.Err != nil {
		out = append(out, MaintenanceFailure{Name: RetentionName, Err: o.Retention.Err})
	}
	return out
}

// Healthy reports whether no table is unhealthy and nothing failed.
func (o *MaintenanceOutcome) Healthy() bool { return len(o.Unhealthy()) == 0 && len(o.Failures()) == 0 }

// Cycle runs one maintenance cycle at now. Per table, in order: create the
// partitions ahead (deferred, not failed, when a lock is held), archive the due windows (bounded), compact the cold
// tier if it crossed a threshold and expire snapshots if enabled, both if
// the lease was won, remove orphan files if enabled and due (by the
// replica that takes the lease), and compute
// the table's health; then
// the system tables are refreshed with those healths, so that a long-lived
// process's queries see them as of its last cycle; then the retention
// sweep, if enabled, by the replica that wins its lease. A failing table does not end the cycle.
// A now that cannot be the time (see CheckNow), or is before a table's
// watermark, is refused with ErrNowOutOfRange: nothing is done with it.
func (m *Maintenance) Cycle(ctx context.Context, now time.Time) *MaintenanceOutcome {
	out := &MaintenanceOutcome{At: now}
	// A now that cannot be the time does nothing anywhere: partitions
	// made for it, windows archived, snapshots expired or links swept
	// could not be taken back.
	refused := m.s.CheckNow(now)
	for _, t := range m.s.tables {
		if refused != nil {
			out.Tables = append(out.Tables, TableOutcome{Table: t.decl.Name,
				Archive: ArchiveOutcome{Table: t.decl.Name, Status: archive.Failed},
				Status:  refusedStatus(t.decl.Name, refused),
				Err:     fmt.Errorf("store: maintain %s: %w", t.decl.Name, refused)})
			continue
		}
		out.Tables = append(out.Tables, m.table(ctx, t, now))
	}
	sts := make([]TableStatus, len(out.Tables))
	for i, t := range out.Tables {
		sts[i] = t.Status
	}
	if err := m.s.publishSystemTables(ctx, sts); err != nil {
		// The relations that could be computed are published; the cycle's
		// own outcome already says what is wrong with a table.
		m.s.log.Warn("store: maintenance: system tables", "err", err)
	}
	if m.retention.IsZero() {
		return out
	}
	r := &RetentionOutcome{}
	if refused != nil {
		r.Err = fmt.Errorf("store: retention sweep: %w", refused)
	} else if m.s.opts.Registry == nil {
		r.Err = errors.New("store: retention sweep: no subject registry configured")
	} else {
		m.sweep(ctx, now, r)
	}
	if r.Err != nil {
		m.s.metrics.RetentionFailed(ctx)
	}
	out.Retention = r
	return out
}

// sweep runs the retention sweep into r under the deployment's sweep
// lease: it destroys links and writes an audit row, mutations that belong
// to one replica, as archival and expiry do. A replica that finds the
// lease held sweeps nothing and reports it contended.
func (m *Maintenance) sweep(ctx context.Context, now time.Time, r *RetentionOutcome) {
	err := m.s.arch.WithLease(ctx, RetentionName, func(ctx context.Context) error {
		var err error
		r.Removed, err = m.s.opts.Registry.Sweep(ctx, now, m.retention, m.legalBasis, m.actor)
		m.s.metrics.RetentionRemoved(ctx, r.Removed)
		return err
	})
	if errors.Is(err, ErrLeaseHeld) {
		r.LeaseContended = true
		m.s.log.Info("store: maintenance: retention sweep lease held by another replica; it sweeps")
		return
	}
	r.Err = err
}

func (m *Maintenance) table(ctx context.Context, t *table, now time.Time) TableOutcome {
	name := t.decl.Name
	to := TableOutcome{Table: name}
	if _, _, err := m.s.ready(ctx, t); err != nil {
		// The table fails alone; the next cycle tries to open it again.
		to.Archive = ArchiveOutcome{Table: name, Status: archive.Failed}
		m.s.metrics.ArchivalFailed(ctx, name, failureReason(to.Archive.Status, err))
		to.Status = m.s.statusOf(ctx, t, now)
		to.Err = fmt.Errorf("store: maintain %s: %w", name, err)
		return to
	}
	var errs []error
	if err := m.s.checkNowFor(ctx, t, now); err != nil {
		to.Archive = ArchiveOutcome{Table: name, Status: archive.Failed}
		to.Status = refusedStatus(name, err)
		to.Err = fmt.Errorf("store: maintain %s: %w", name, err)
		return to
	}
	// A creation that gave up on a held lock changed nothing and is
	// tried again next cycle: benign, like a deferred detach. The
	// partitions ahead in the status say when it is not.
	decl, _ := t.running()
	switch _, err := m.s.hot.EnsurePartitions(ctx, decl, now); {
	case errors.Is(err, hot.ErrDeferred):
		to.PartitionsDeferred = true
		m.s.log.Info("store: maintenance: partition creation deferred by a held lock; the next cycle tries again", "table", name, "err", err)
	case err != nil:
		errs = append(errs, fmt.Errorf("partitions: %w", err))
	}
	var err error
	if to.Archive, err = m.s.Archive(ctx, name, now); err != nil {
		errs = append(errs, err)
	}
	// Compaction, like expiry, belongs to the lease's winner and takes the
	// lease again itself. A conflict with a late correction is not a
	// failure: the next cycle plans again.
	if m.compact != nil && (to.Archive.Status == archive.Archived || to.Archive.Status == archive.NothingDue) {
		c, err := m.s.Compact(ctx, name, *m.compact)
		switch {
		case errors.Is(err, ErrLeaseHeld):
		case errors.Is(err, ErrCompactionConflict):
			m.s.log.Info("store: maintenance: compaction overtaken, retried next cycle", "table", name, "err", err)
		case err != nil:
			errs = append(errs, fmt.Errorf("compact: %w", err))
		case c.SnapshotID != 0:
			to.Compacted = &c
		}
	}
	// Expiry is a metadata mutation: it belongs to the lease's winner, and
	// takes the lease again itself; a session that took it in between
	// archives, and this cycle expires nothing.
	if m.expire && (to.Archive.Status == archive.Archived || to.Archive.Status == archive.NothingDue) {
		e, err := m.s.ExpireSnapshots(ctx, name, now)
		switch {
		case errors.Is(err, ErrLeaseHeld):
		case err != nil:
			errs = append(errs, fmt.Errorf("expire snapshots: %w", err))
		default:
			to.Expired = &e
		}
	}
	if to.Orphans, err = m.removeOrphans(ctx, name, now); err != nil {
		errs = append(errs, fmt.Errorf("orphan files: %w", err))
	}
	to.Status = m.s.statusOf(ctx, t, now)
	if to.Status.Err != nil {
		errs = append(errs, to.Status.Err)
	}
	if len(errs) > 0 {
		to.Err = fmt.Errorf("store: maintain %s: %w", name, errors.Join(errs...))
	}
	return to
}

// Start runs a cycle at once and then every interval, in a goroutine,
// until the handle is stopped or ctx is cancelled; either ends the loop
// after the cycle in flight.
func (m *Maintenance) Start(ctx context.Context) *MaintenanceHandle {
	ctx, cancel := context.WithCancel(ctx)
	h := &MaintenanceHandle{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		tick := time.NewTicker(m.interval)
		defer tick.Stop()
		for {
			// The cycle in flight finishes even when the loop is stopped.
			out := m.Cycle(context.WithoutCancel(ctx), m.clock())
			h.record(out)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

// A MaintenanceHandle owns a running maintenance loop.
type MaintenanceHandle struct {
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	last   *MaintenanceOutcome
	cycles int
}

func (h *MaintenanceHandle) record(o *MaintenanceOutcome) {
	h.mu.Lock()
	h.last, h.cycles = o, h.cycles+1
	h.mu.Unlock()
}

// Stop ends the loop after the cycle in flight and waits for it.
func (h *MaintenanceHandle) Stop() {
	h.cancel()
	<-h.done
}

// Done is closed when the loop has ended.
func (h *MaintenanceHandle) Done() <-chan struct{} { return h.done }

// Last returns the outcome of the latest finished cycle, nil before the
// first, and how many cycles finished.
func (h *MaintenanceHandle) Last() (*MaintenanceOutcome, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last, h.cycles
}
