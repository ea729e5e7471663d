package cold

import (
	"fmt"
	"strings"
	"sync"

	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

// planCacheSize bounds the plans a Tier keeps: a few per table of the
// ranges queried most, such as a dashboard's.
const planCacheSize = 64

// A planCache keeps plans by table, snapshot and range. A snapshot's files
// never change, so a plan of it stays right; only the load of the table's
// metadata, which names the current snapshot, is needed per query.
type planCache struct {
	mu    sync.Mutex
	plans map[string]Plan
	order []string // oldest first
}

// plan returns the plan of q in snapshot snap of ice from the cache, or
// makes it with build.
func (pc *planCache) plan(ice *table.Table, snap *table.Snapshot, q series.Range, build func() (Plan, error)) (Plan, error) {
	if snap == nil {
		return build()
	}
	key := fmt.Sprintf("%s|%d|%d|%d|%s|%s", ice.Metadata().TableUUID(), snap.SnapshotID,
		q.From.UnixMicro(), q.To.UnixMicro(), strings.Join(q.MaLo, ","), strings.Join(q.OBIS, ","))
	pc.mu.Lock()
	p, ok := pc.plans[key]
	pc.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := build()
	if err != nil {
		return Plan{}, err
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.plans == nil {
		pc.plans = map[string]Plan{}
	}
	if _, ok := pc.plans[key]; !ok {
		pc.plans[key] = p
		pc.order = append(pc.order, key)
		if len(pc.order) > planCacheSize {
			delete(pc.plans, pc.order[0])
			pc.order = pc.order[1:]
		}
	}
	return p, nil
}
