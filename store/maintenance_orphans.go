package store

import (
	"context"
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
// at now, and if so records that they were.
func (o *orphanSchedule) due(name string, now time.Time) bool {
	if o.age <= 0 {
		return false
	}
	if last, ok := o.last[name]; ok && now.Sub(last) < o.period && !now.Before(last) {
		return false
	}
	o.last[name] = now
	return true
}

// removeOrphans runs the orphan step of table name's cycle at now, if due:
// the report, or nil when it did not run.
func (m *Maintenance) removeOrphans(ctx context.Context, name string, now time.Time) (*OrphanReport, error) {
	m.mu.Lock()
	due := m.orphans.due(name, now)
	m.mu.Unlock()
	if !due {
		return nil, nil
	}
	r, err := m.s.Orphans(ctx, name, OrphanOptions{OlderThan: m.orphans.age, Delete: true})
	if err != nil {
		return nil, err
	}
	if r.Deleted > 0 {
		m.s.log.Info("store: maintenance removed orphan files", "table", name, "files", r.Deleted, "bytes", r.Bytes())
	}
	return &r, nil
}
