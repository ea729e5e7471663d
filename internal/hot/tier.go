package hot

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// DefaultDDLLockTimeout is the lock timeout of DDL statements when
// Options.DDLLockTimeout is zero.
const DefaultDDLLockTimeout = 3 * time.Second

// NoLockTimeout, as Options.DDLLockTimeout, lets DDL wait for its locks
// indefinitely: PostgreSQL's default, and the advice against. A
// configuration's "0s" maps to it.
const NoLockTimeout time.Duration = -1

// Options configure a Tier.
type Options struct {
	// Schema holds the tables, their partitions and the metadata table
	// hot_tables; default "meterstore".
	Schema string
	// DDLLockTimeout bounds how long a DDL statement waits for a lock
	// before it gives up, changing nothing (ErrDeferred). Zero means
	// DefaultDDLLockTimeout; NoLockTimeout disables the bound.
	DDLLockTimeout time.Duration
	// Logger receives a line per partition created, detached or dropped
	// and per deferral; nil discards them.
	Logger *slog.Logger
	// ReadPool, if set, answers ReadSeries, so that a series read does
	// not wait for a connection a write holds for its COPY; nil means the
	// tier's pool. The tier does not close it.
	ReadPool *pgxpool.Pool
}

// A Tier is the PostgreSQL tier of a store: declared tables, their
// partitions, writes and scans. It holds no state of its own beyond its
// settings and the integrity of the tables it has seen, and is safe for
// concurrent use.
type Tier struct {
	integrityCache
	pool  *pgxpool.Pool
	reads *pgxpool.Pool // ReadSeries' connections
	// readsGeneric says reads' connections start on generic plans
	// (GenericPlans): ReadSeries then needs no setting of its own.
	readsGeneric bool
	// seriesTexts holds a *seriesText per table name, the last made.
	seriesTexts sync.Map
	// vacuums holds the dirty logs being vacuumed (see vacuumSoon).
	vacuums sync.Map
	// batches holds the *fetched batches of ended cursors, for the next
	// ones to fill instead of growing new arenas.
	batches     sync.Pool
	spare       spareRows
	schema      string
	lockTimeout time.Duration
	cal         *metering.Calendar
	log         *slog.Logger
	// snapshots has a token per open Snapshot, at most half the pool's
	// connections.
	snapshots chan struct{}
	// onUpgradeStep, set by tests, is called at the steps of an upgrade
	// to IntegrityStatement (upgradeStep); upgradeBatch, if set, replaces
	// upgradeBatchRows, so that a small table is backfilled in batches.
	onUpgradeStep func(step string)
	upgradeBatch  int
	// compactFloor is the smallest heap Compact rewrites; tests lower it.
	compactFloor int64
	// statementLayout, set by tests, is the layout new tables of
	// IntegrityStatement get in place of newLayout's: the dictionary
	// layout makes them as the code before the lean layout did.
	statementLayout layout
	// beforeCommit, set by tests, is called before a write commits; an
	// error fails the write, which then rolls back.
	beforeCommit func(ctx context.Context) error
}

// schemaPattern is what a schema name must look like: it is spliced into
// statements quoted, but one spelling per schema keeps names unambiguous.
var schemaPattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// New returns a Tier on pool, which it does not close.
func New(pool *pgxpool.Pool, opts Options) (*Tier, error) {
	if opts.Schema == "" {
		opts.Schema = "meterstore"
	}
	if !schemaPattern.MatchString(opts.Schema) || len(opts.Schema) > 63 {
		return nil, &series.Error{Kind: series.InvalidConfig, Op: "open", Err: fmt.Errorf("schema name %q: want a lowercase letter, then lowercase letters, digits and underscores", opts.Schema)}
	}
	switch {
	case opts.DDLLockTimeout == 0:
		opts.DDLLockTimeout = DefaultDDLLockTimeout
	case opts.DDLLockTimeout < 0 && opts.DDLLockTimeout != NoLockTimeout:
		return nil, &series.Error{Kind: series.InvalidConfig, Op: "open", Err: fmt.Errorf("negative DDL lock timeout %v", opts.DDLLockTimeout)}
	case opts.DDLLockTimeout > 0 && opts.DDLLockTimeout < time.Millisecond:
		return nil, &series.Error{Kind: series.InvalidConfig, Op: "open", Err: fmt.Errorf("DDL lock timeout %v: PostgreSQL counts in milliseconds", opts.DDLLockTimeout)}
	}
	cal, err := metering.NewCalendar()
	if err != nil {
		return nil, &series.Error{Kind: series.InvalidConfig, Op: "open", Err: err}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	tokens := 1
	if pool != nil {
		tokens = max(1, int(pool.Config().MaxConns)/2)
	}
	reads := opts.ReadPool
	if reads == nil {
		reads = pool
	}
	return &Tier{pool: pool, reads: reads, readsGeneric: startsGeneric(reads), schema: opts.Schema, lockTimeout: opts.DDLLockTimeout, cal: cal, log: opts.Logger,
		snapshots: make(chan struct{}, tokens), compactFloor: defaultCompactFloor}, nil
}

// Schema returns the schema holding the tier's tables.
func (h *Tier) Schema() string { return h.schema }

// ident returns the quoted, schema-qualified name of a relation.
func (h *Tier) ident(name string) string { return pgx.Identifier{h.schema, name}.Sanitize() }

// quote returns a quoted identifier.
func quote(name string) string { return pgx.Identifier{name}.Sanitize() }

// LockTimeout returns the lock timeout of DDL statements; NoLockTimeout if
// they wait indefinitely.
func (h *Tier) LockTimeout() time.Duration { return h.lockTimeout }
