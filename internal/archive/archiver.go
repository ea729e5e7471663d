package archive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/series"
)

// An Archiver runs the archival protocol for the tables of one store. It
// holds no state between cycles and is safe for concurrent use; the lease
// serializes cycles of one table across goroutines and processes.
type Archiver struct {
	hot    *hot.Tier
	cold   *cold.Tier
	pool   *pgxpool.Pool
	cfg    Config
	log    *slog.Logger
	ledger ledger
	// crashAt, if set, is called at each step of a window, so that a test
	// can end the process there: "planned" (a window planned, not yet
	// fenced), "after-detach", "mid-stream" (after each chunk),
	// "after-stream" (everything read, nothing committed), "after-commit"
	// and "after-drop".
	crashAt func(step string)
}

// New returns an Archiver that moves readings from h to c. pool is the
// hot tier's database; it needs a connection for the lease and one for
// reading besides those the tiers use.
func New(h *hot.Tier, c *cold.Tier, pool *pgxpool.Pool, cfg Config) (*Archiver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Archiver{hot: h, cold: c, pool: pool, cfg: cfg, log: log,
		ledger: ledger{pool: pool, schema: h.Schema()}}, nil
}

func (a *Archiver) crash(step string) {
	if a.crashAt != nil {
		a.crashAt(step)
	}
}

// resumable returns the starts of the partitions that recs records as
// detached by an archival whose commit was not confirmed: the only detached
// partitions above W that a cycle resumes.
func resumable(recs map[int64]record) map[int64]bool {
	out := make(map[int64]bool)
	for start, r := range recs {
		if r.archivedAt == nil && r.violation == nil {
			out[start] = true
		}
	}
	return out
}

// strayReason describes p, a detached partition that the watermark w
// (formatted by formatW) does not cover and no archival recorded detaching.
func strayReason(p hot.Partition, w string) string {
	return fmt.Sprintf("detached partition %s [%s, %s) is not covered by the watermark %s, and no archival recorded detaching it (detached by hand?): "+
		"nothing is archived past its start until an operator attaches it again or removes it",
		p.Name, cold.FormatTime(p.From), cold.FormatTime(p.To), w)
}

// CheckWatermark compares the watermark w of table (ok is false for none),
// as a reader found it in the catalog, with the highest one the archival
// ledger recorded as committed. A reader that reads w while archivals may
// commit uses VetWatermark, which reads the ledger first; this one is for
// a caller no archival can overtake, such as the archival under its lease. A lower one, or none where the ledger has
// one, is an *InvariantError wrapping a *WatermarkRegression: the catalog's
// log lost its newest entries. A ledger that was never created, or that
// has no record of table, vouches for nothing and passes every w.
func (a *Archiver) CheckWatermark(ctx context.Context, table string, w time.Time, ok bool) error {
	lw, lok, err := a.ledger.highestW(ctx, table)
	if err != nil {
		return ledgerFailed(table, err)
	}
	if !lok || (ok && !w.Before(lw)) {
		return nil
	}
	reg := &WatermarkRegression{Table: table, Expected: lw, Found: w, HasFound: ok}
	return &InvariantError{Table: table, Reason: reg.Error(), Err: reg}
}

// VetWatermark reads the watermark of table with read and vets it as
// CheckWatermark does, but reads the archival ledger first: a commit the
// ledger records has landed before read looks, so an archival that commits
// between the two reads is never mistaken for a log that lost entries, as
// it would be by a reader that read W first. A failure of read is returned
// as it is.
func (a *Archiver) VetWatermark(ctx context.Context, table string, read func(context.Context) (time.Time, bool, error)) (time.Time, bool, error) {
	lw, lok, err := a.ledger.highestW(ctx, table)
	if err != nil {
		return time.Time{}, false, ledgerFailed(table, err)
	}
	w, ok, err := read(ctx)
	if err != nil {
		return time.Time{}, false, err
	}
	if !lok || (ok && !w.Before(lw)) {
		return w, ok, nil
	}
	reg := &WatermarkRegression{Table: table, Expected: lw, Found: w, HasFound: ok}
	return w, ok, &InvariantError{Table: table, Reason: reg.Error(), Err: reg}
}

// RecordedWatermark returns the highest watermark of table the archival
// ledger recorded as committed, a lower bound of the true one that
// PostgreSQL alone can tell; ok is false if none is recorded.
func (a *Archiver) RecordedWatermark(ctx context.Context, table string) (w time.Time, ok bool, err error) {
	if w, ok, err = a.ledger.highestW(ctx, table); err != nil {
		return time.Time{}, false, ledgerFailed(table, err)
	}
	return w, ok, nil
}

// ForgetWatermark removes the ledger's record of table's watermark, after
// the table was purged: a table created again under its name starts anew.
func (a *Archiver) ForgetWatermark(ctx context.Context, table string) error {
	if err := a.ledger.forgetW(ctx, table); err != nil {
		return ledgerFailed(table, err)
	}
	return nil
}

// errStop ends a partition read when the cold tier stops consuming.
var errStop = errors.New("stop")

// archive detaches the partitions of win, streams them into one cold commit
// that moves W to the window's end, and checks that the commit holds the
// rows the partitions do. If a detach is deferred after others succeeded,
// the window shrinks to the detached ones, which no writer can reach any
// more, and waiting says why the rest waits; if the first is deferred,
// nothing happened. A detach refused for values the declaration lacks
// (hot.ErrUndeclaredValues) is such a deferral: a process that declares
// the column, as the newer ones of a rolling upgrade do, archives the
// rest.
func (a *Archiver) archive(ctx context.Context, t *series.Table, ct *cold.Table, win window, now time.Time) (_ *Window, waiting string, _ error) {
	for i, p := range win.parts {
		if p.Attached {
			if err := a.ledger.detaching(ctx, t.Name, p.From, now); err != nil {
				return nil, "", ledgerFailed(t.Name, err)
			}
		}
		// A partition detached before, by an archival cut short, is
		// checked for values this declaration cannot carry as a fresh
		// detach is.
		err := a.hot.Detach(ctx, t, p.From)
		switch {
		case errors.Is(err, hot.ErrUndeclaredValues):
			a.log.Info("archive: partition left to a process that declares its columns", "table", t.Name, "partition", p.Name, "err", err)
			waiting = err.Error()
		case errors.Is(err, hot.ErrDeferred):
			a.log.Info("archive: detach deferred", "table", t.Name, "partition", p.Name)
			waiting = fmt.Sprintf("partition %s: %v", p.Name, err)
		case err != nil:
			return nil, "", fmt.Errorf("archive %s: %w", t.Name, err)
		default:
			continue
		}
		if i == 0 {
			return nil, waiting, nil
		}
		win.to, win.parts = p.From, win.parts[:i]
		break
	}
	a.crash("after-detach")

	var read atomic.Int64
	chunk := a.cfg.chunkRows()
	rows := func(yield func(series.Reading, error) bool) {
		for _, p := range win.parts {
			err := a.hot.ScanPartition(ctx, t, p, chunk, func(rs []series.Reading) error {
				for _, r := range rs {
					read.Add(1)
					if !yield(r, nil) {
						return errStop
					}
				}
				a.crash("mid-stream")
				return nil
			})
			if errors.Is(err, errStop) {
				return
			}
			if err != nil {
				yield(series.Reading{}, fmt.Errorf("archive %s: read partition %s: %w", t.Name, p.Name, err))
				return
			}
		}
		a.crash("after-stream")
	}
	// Under the lease only a late correction commits beside an archival:
	// a lost race wrote nothing, and the detached rows read again as they
	// were, so the window is committed again at once rather than a cycle
	// later.
	var (
		commit cold.Commit
		err    error
	)
	for attempt := 1; ; attempt++ {
		read.Store(0)
		commit, err = a.cold.Archive(ctx, ct, win.to, win.from, win.to, rows)
		if !errors.Is(err, cold.ErrCommitConflict) || attempt == commitAttempts || ctx.Err() != nil {
			break
		}
		a.log.Info("archive: the window's commit lost a race; committing it again", "table", t.Name,
			"from", win.from, "to", win.to, "attempt", attempt, "err", err)
	}
	if err != nil {
		return nil, "", cold.Unavailable("archive", t.Name,
			fmt.Errorf("archive %s: window [%s, %s): %w", t.Name, cold.FormatTime(win.from), cold.FormatTime(win.to), err))
	}
	a.crash("after-commit")
	done := &Window{From: win.from, To: win.to, Rows: commit.Rows, Recovered: win.recovered}
	if err := a.ledger.committedW(ctx, t.Name, win.to, now); err != nil {
		return done, "", ledgerFailed(t.Name, err)
	}

	counts, total, err := a.count(ctx, win.parts)
	if err != nil {
		return done, "", fmt.Errorf("archive %s: %w", t.Name, err)
	}
	if commit.Rows != read.Load() || read.Load() != total {
		reason := fmt.Sprintf("window [%s, %s): read %d rows, committed %d, partitions hold %d",
			cold.FormatTime(win.from), cold.FormatTime(win.to), read.Load(), commit.Rows, total)
		return done, "", a.violated(ctx, t, win.parts, now, reason)
	}
	if err := a.ledger.archived(ctx, t.Name, starts(win.parts), counts, now); err != nil {
		return done, "", ledgerFailed(t.Name, err)
	}
	a.log.Info("archive: window archived", "table", t.Name, "from", win.from, "to", win.to,
		"rows", commit.Rows, "partitions", len(win.parts), "recovered", win.recovered)
	return done, waiting, nil
}

// commitAttempts bounds how often a window's commit is tried when it loses
// a race to a concurrent commit.
const commitAttempts = 4

// count returns the rows of each partition and their sum.
func (a *Archiver) count(ctx context.Context, parts []hot.Partition) ([]int64, int64, error) {
	counts := make([]int64, len(parts))
	var total int64
	for i, p := range parts {
		n, err := a.hot.CountRows(ctx, p)
		if err != nil {
			return nil, 0, fmt.Errorf("count partition %s: %w", p.Name, err)
		}
		counts[i], total = n, total+n
	}
	return counts, total, nil
}

// violated records reason against parts, so they are never dropped, and
// returns it as an *InvariantError.
func (a *Archiver) violated(ctx context.Context, t *series.Table, parts []hot.Partition, now time.Time, reason string) error {
	inv := &InvariantError{Table: t.Name, Reason: reason}
	for _, p := range parts {
		if err := a.ledger.violated(ctx, t.Name, p.From, now, reason); err != nil {
			return errors.Join(inv, ledgerFailed(t.Name, err))
		}
	}
	return inv
}

func starts(parts []hot.Partition) []time.Time {
	out := make([]time.Time, len(parts))
	for i, p := range parts {
		out[i] = p.From
	}
	return out
}

// fenceAt returns t's partitions, after raising the partition floor to the
// watermark w if it is below (a deployment from before the floor, or one
// whose fence was lost with a purge); ok is false if t has no watermark.
func (a *Archiver) fenceAt(ctx context.Context, t *series.Table, w time.Time, ok bool) ([]hot.Partition, error) {
	if !ok || !t.Width.Start(w).Equal(w) {
		return a.hot.Partitions(ctx, t)
	}
	f, fok, err := a.hot.PartitionFloor(ctx, t)
	switch {
	case err != nil:
		return nil, err
	case fok && !f.Before(w):
		return a.hot.Partitions(ctx, t)
	}
	return a.hot.Fence(ctx, t, w)
}

// samePartitions reports whether two lists of partitions, ascending, name
// the same partitions in the same state.
func samePartitions(a, b []hot.Partition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].From.Equal(b[i].From) || a[i].Attached != b[i].Attached {
			return false
		}
	}
	return true
}
