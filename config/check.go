package config

import (
	"fmt"
	"time"

	"github.com/meterstore/meterstore/series"
)

// check checks the settings that interact: each is valid alone and wrong
// beside another, so neither key's reader can see it.
func (r *reader) check(c *Config) {
	r.checkArchive(c)
	if t := c.Hot.DDLLockTimeout; t > 0 && t < time.Millisecond {
		r.errorf("hot.ddl_lock_timeout", "%v: PostgreSQL counts lock timeouts in milliseconds; write 0s to disable it",
			Duration(t))
	}
	if c.Catalog.Log == "object_store" && c.Catalog.Isolation == "serializable" && r.ok("catalog") {
		r.errorf("catalog.isolation", "serializable applies to the postgres log only; catalog.log is object_store")
	}
	first := map[string]int{}
	for i, t := range c.tables {
		key := fmt.Sprintf("table[%d]", i)
		if j, ok := first[t.Name]; ok && t.Name != "" {
			r.errorf(key+".name", "table %q is declared twice (first as table[%d], line %d)",
				t.Name, j, r.line(fmt.Sprintf("table[%d].name", j)))
			continue
		}
		first[t.Name] = i
		if t.Name == "consensus" && c.Catalog.Log == "postgres" {
			r.errorf(key+".name", "%q is the table of the catalog's log in schema %s; choose another name",
				t.Name, c.Postgres.Schema)
		}
		if t.Headroom < c.Maintenance.Interval && r.ok(key+".headroom", "maintenance.interval") {
			r.errorf(key+".headroom", "%v is shorter than maintenance.interval %v: a write could find no partition "+
				"before the next cycle creates one", Duration(t.Headroom), Duration(c.Maintenance.Interval))
		}
		r.checkTable(key, t)
	}
	r.checkTokens(c)
	r.checkVend(c) // vend.go
}

// checkArchive checks the [archive] settings against each other, the
// maintenance interval and the partition width of every table. Its own
// checks name the key to change. What the tiers accept is the store's to
// decide (store.CheckConfig); a test there holds the two together.
func (r *reader) checkArchive(c *Config) {
	a := c.Archive
	if !r.ok("archive") {
		return
	}
	if a.Step <= 0 || a.Step%day != 0 {
		r.errorf("archive.archival_step", "%v: want a positive whole number of days, so that windows end on partition boundaries",
			Duration(a.Step))
		return
	}
	if a.SettlementLag < a.Step {
		r.errorf("archive.settlement_lag", "%v is shorter than archive.archival_step %v: a window would be archived while corrections "+
			"for it still arrive, and they would land below the watermark, where no query looks", Duration(a.SettlementLag), Duration(a.Step))
	}
	// A cycle must archive at least the time that passes until the next.
	if need := (c.Maintenance.Interval + a.Step - 1) / a.Step; r.ok("maintenance.interval") && time.Duration(a.MaxWindowsPerCycle) < need {
		r.errorf("archive.max_windows_per_cycle", "%d windows of %v per maintenance.interval of %v: archival could never catch up",
			a.MaxWindowsPerCycle, Duration(a.Step), Duration(c.Maintenance.Interval))
	}
	for i, t := range c.tables {
		if t.Width == series.Monthly && a.Step < longestMonth {
			r.errorf(fmt.Sprintf("table[%d].width", i), "table %q has monthly partitions, which need an archive.archival_step of at least 31d, not %v",
				t.Name, Duration(a.Step))
		}
	}
}

// longestMonth is the shortest archival step of a table with monthly
// partitions: every window must hold at least one whole month.
const longestMonth = 31 * day
