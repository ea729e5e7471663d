package catalog

import (
	"context"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/meterstore/meterstore/consensus"
)

// A CASEvent reports one compare-and-set a Catalog made on its log: a
// commit of a table, or an update of its registry of namespaces and
// tables.
type CASEvent struct {
	// Table is the table the commit was for; nil for the registry.
	Table table.Identifier
	// Result is the log's answer when Err is nil: consensus.Committed, or
	// consensus.ExpectationMismatch when another writer came first.
	Result consensus.Result
	// Err is the log's error, classified as consensus classifies it.
	Err error
	// Duration is how long the log took to answer.
	Duration time.Duration
}

// observedLog is a log whose compare-and-sets are reported to observe,
// named by what the catalog keeps in the shard.
type observedLog struct {
	consensus.Log
	prefix  string
	observe func(context.Context, CASEvent)
}

func (l *observedLog) CompareAndSet(ctx context.Context, shard string, expected int64, data []byte) (consensus.Result, error) {
	start := time.Now()
	res, err := l.Log.CompareAndSet(ctx, shard, expected, data)
	l.observe(ctx, CASEvent{Table: l.tableOf(shard), Result: res, Err: err, Duration: time.Since(start)})
	return res, err
}

// tableOf returns the table whose log shard is shard (see
// Catalog.tableShard), nil for the registry's.
func (l *observedLog) tableOf(shard string) table.Identifier {
	rest, ok := strings.CutPrefix(shard, l.prefix+"table/")
	if !ok {
		return nil
	}
	// A namespace has no dot (see validName), so the first one ends it.
	ns, name, ok := strings.Cut(rest, ".")
	if !ok {
		return nil
	}
	return table.Identifier{ns, name}
}
