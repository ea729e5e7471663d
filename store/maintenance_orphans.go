package store

import (
	"context"
	"errors"
	"time"
)

// orphanSchedule decides when a maintenance loop removes a table's orphan
// files: listing a warehouse costs a request per thousand files, so once
// every period per table is plenty for files that only ever accumulate.
type orphanSchedule struct {
	age    time.Duration // the safety age; zero turns removal off
	period time.Duration
	last   map[string]time.Time // the cycle time of each table's last removal
}

// DefaultOrphanPeriod is how often a maintenance loop removes a table's
// orphan files.
const DefaultOrphanPeriod = 24 * time.Hour

// RemoveOrphans has the loop delete, once a day per table, the files
// Orphans finds older than age (see OrphanOptions.OlderThan); zero turns
// it off, the default.
func (m *Maintenance) RemoveOrphans(age time.Duration) *Maintenance {
	m.orphans = orphanSchedule{age: age, period: DefaultOrphanPeriod, last: map[string]time.Time{}}
	return m
}

// due reports whether table name's orphans are to be removed in the cycle
// at now.
func (o *orphanSchedule) due(name string, now time.Time) bool {
	if o.age <= 0 {
		return false
	}
	last, ok := o.last[name]
	return !ok || now.Sub(last) >= o.period || now.Before(last)
}

// removeOrphans runs the orphan step of table name's cycle at now, if due:
// the report, or nil when it did not run. Deleting files of the cold tier
// belongs to the replica that holds the table's archive lease, as every
// other mutation of it does: a replica that finds it held removes nothing
// and tries again next cycle, and each replica does not list the
// warehouse for itself.
func (m *Maintenance) removeOrphans(ctx context.Context, name string, now time.Time) (*OrphanReport, error) {
	m.mu.Lock()
	due := m.orphans.due(name, now)
	m.mu.Unlock()
	if !due {
		return nil, nil
	}
	var r OrphanReport
	err := m.s.arch.WithLease(ctx, name, func(ctx context.Context) error {
		var err error
		r, err = m.s.Orphans(ctx, name, OrphanOptions{OlderThan: m.orphans.age, Delete: true})
		return err
	})
	switch {
	case errors.Is(err, ErrLeaseHeld):
		m.s.log.Info("store: maintenance: orphan removal left to the replica holding the archive lease", "table", name)
		return nil, nil
	case err != nil:
		return nil, err
	}
	m.mu.Lock()
	m.orphans.last[name] = now
	m.mu.Unlock()
	if r.Deleted > 0 {
		m.s.log.Info("store: maintenance removed orphan files", "table", name, "files", r.Deleted, "bytes", r.Bytes())
	}
	return &r, nil
}
