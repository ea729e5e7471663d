package privacy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// DefaultSchema is the schema of the registry when Options.Schema is empty.
// It is the hot tier's default, so a deployment's tables and its registry
// sit side by side.
const DefaultSchema = "meterstore"

// Names of the relations Open creates in the registry's schema.
const (
	subjectsTable   = "subjects"
	logTable        = "retention_log"
	erasureTable    = "erasure_log"
	suppressedTable = "suppressed_subjects"
	keyTable        = "subject_key"
	yearIndex       = "subjects_collection_year_idx"
	collectIndex    = "subjects_collected_at_idx"
	naturalKey      = "subjects_natural_id_year_key"
)

// ddlLockTimeout bounds how long Open's DDL waits for a lock, so that it
// cannot queue registrations behind it for longer.
const ddlLockTimeout = "5s"

// Options configure a Registry.
type Options struct {
	// Schema holds the registry table subjects, the audit tables
	// retention_log and erasure_log, the suppression list and the key
	// fingerprint; default DefaultSchema. It is created if missing.
	Schema string
	// Logger receives a line per sweep and per erasure; nil discards them.
	// No line carries a natural id.
	Logger *slog.Logger
	// SubjectKey is the deployment's secret key for the suppression list:
	// at least MinSubjectKeyLen random bytes, kept outside the database.
	// Without it the registry refuses to erase, and refuses to issue new
	// references once the list is not empty (see the package
	// documentation). Open copies it.
	SubjectKey []byte
}

// A Registry is the subject registry of a deployment: the only place that
// links the pseudonymous references carried by readings to natural ids.
// It holds no state beyond its settings and is safe for concurrent use.
type Registry struct {
	pool     *pgxpool.Pool
	schema   string
	cal      *metering.Calendar
	log      *slog.Logger
	subjects string // quoted, schema-qualified name of the registry table
	audit    string // quoted, schema-qualified name of the audit table

	key        []byte // the subject key, nil if none was given
	erasures   string // quoted, schema-qualified name of erasure_log
	suppressed string // quoted, schema-qualified name of suppressed_subjects
	keyRow     string // quoted, schema-qualified name of subject_key

	// prepared is set once the registry's relations are ensured and the
	// subject key checked: at Open, or, when PostgreSQL could not be
	// reached then, by the first operation that needs them.
	mu       sync.Mutex
	prepared bool

	// Test knobs that break the registry on purpose, so that the tests can
	// show they catch it; always false outside them.
	skipSuppression bool // Register ignores the suppression list
	skipSubjectLock bool // Register and Erase take no subject lock
}

// Open returns the registry in opts.Schema on pool, which it does not
// close. It creates the schema, the registry table subjects with its
// indexes, the audit tables retention_log and erasure_log, the suppression
// list suppressed_subjects and the table subject_key if they do not exist;
// opening an existing registry changes nothing and takes no lock on it.
// Given a subject key, Open refuses it as InvalidConfig if it is shorter
// than MinSubjectKeyLen or is not the key the suppression list was written
// with.
func Open(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Registry, error) {
	const op = "open"
	if pool == nil {
		return nil, &series.Error{Kind: series.InvalidConfig, Op: opName(op), Err: errors.New("nil pool")}
	}
	if opts.Schema == "" {
		opts.Schema = DefaultSchema
	}
	if len(opts.Schema) > 63 || !validText(opts.Schema) {
		return nil, &series.Error{Kind: series.InvalidConfig, Op: opName(op), Err: fmt.Errorf("schema name %q: want at most 63 bytes of printable UTF-8", opts.Schema)}
	}
	cal, err := metering.NewCalendar()
	if err != nil {
		return nil, &series.Error{Kind: series.InvalidConfig, Op: opName(op), Err: err}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.SubjectKey != nil && len(opts.SubjectKey) < MinSubjectKeyLen {
		return nil, &series.Error{Kind: series.InvalidConfig, Op: opName(op),
			Err: fmt.Errorf("subject key of %d bytes, want at least %d", len(opts.SubjectKey), MinSubjectKeyLen)}
	}
	r := &Registry{
		pool:     pool,
		schema:   opts.Schema,
		cal:      cal,
		log:      opts.Logger,
		subjects: pgx.Identifier{opts.Schema, subjectsTable}.Sanitize(),
		audit:    pgx.Identifier{opts.Schema, logTable}.Sanitize(),

		key:        bytes.Clone(opts.SubjectKey),
		erasures:   pgx.Identifier{opts.Schema, erasureTable}.Sanitize(),
		suppressed: pgx.Identifier{opts.Schema, suppressedTable}.Sanitize(),
		keyRow:     pgx.Identifier{opts.Schema, keyTable}.Sanitize(),
	}
	err = r.prepare(ctx, op)
	var se *series.Error
	if errors.As(err, &se) && se.Kind == series.Unavailable {
		// Needed only for what it guards: what needs no registry (a
		// historical read) goes on, and each of its operations prepares
		// it first, failing retryably until PostgreSQL answers.
		r.log.Warn("privacy: the subject registry cannot be reached; its operations fail until it can", "err", err)
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// prepare ensures the registry's relations and checks the subject key,
// once: every operation calls it first.
func (r *Registry) prepare(ctx context.Context, op string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.prepared {
		return nil
	}
	if err := r.ensure(ctx); err != nil {
		return classify(op, err)
	}
	if r.key != nil {
		if err := r.checkKey(ctx, r.pool); err != nil {
			return classify(op, err)
		}
	}
	r.prepared = true
	return nil
}

// Schema returns the schema holding the registry.
func (r *Registry) Schema() string { return r.schema }

// ensure creates whatever relation of the registry is missing.
func (r *Registry) ensure(ctx context.Context) error {
	var complete bool
	// A registry created before erasures were audited lacks the last three;
	// creating them leaves the others, and every row in them, as they are.
	err := r.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL
		AND to_regclass($3) IS NOT NULL AND to_regclass($4) IS NOT NULL AND to_regclass($5) IS NOT NULL
		AND to_regclass($6) IS NOT NULL AND to_regclass($7) IS NOT NULL AND to_regclass($8) IS NOT NULL`,
		r.subjects, r.audit, r.ident(yearIndex), r.ident(collectIndex), r.ident(naturalKey),
		r.erasures, r.suppressed, r.keyRow).Scan(&complete)
	if err != nil {
		return fmt.Errorf("look up registry: %w", err)
	}
	if complete {
		return nil
	}
	// CREATE ... IF NOT EXISTS is not safe against a concurrent CREATE of
	// the same name. The advisory lock serializes registries; another
	// component creating the schema at the same moment is a lost race,
	// after which the next attempt finds the object.
	for attempt := 1; ; attempt++ {
		err = pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error { return r.create(ctx, tx) })
		var pgErr *pgconn.PgError
		if err != nil && attempt < 3 && errors.As(err, &pgErr) && duplicateObject(pgErr.Code) {
			continue
		}
		if err != nil {
			return fmt.Errorf("create registry: %w", err)
		}
		r.log.Debug("privacy: registry created", "schema", r.schema)
		return nil
	}
}

// create runs the registry's DDL in tx.
func (r *Registry) create(ctx context.Context, tx pgx.Tx) error {
	f := fnv.New64a()
	f.Write([]byte("meterstore.privacy\x00" + r.schema))
	stmts := []string{
		`SET LOCAL lock_timeout = '` + ddlLockTimeout + `'`,
		`SELECT pg_advisory_xact_lock(` + fmt.Sprint(int64(f.Sum64())) + `)`,
		`CREATE SCHEMA IF NOT EXISTS ` + pgx.Identifier{r.schema}.Sanitize(),
		`CREATE TABLE IF NOT EXISTS ` + r.subjects + ` (
			reference       text PRIMARY KEY CHECK (reference <> ''),
			natural_id      text NOT NULL CHECK (natural_id <> ''),
			collection_year integer NOT NULL,
			collected_at    timestamptz NOT NULL,
			registered_at   timestamptz NOT NULL DEFAULT now(),
			CONSTRAINT ` + quote(naturalKey) + ` UNIQUE (natural_id, collection_year)
		)`,
		`COMMENT ON TABLE ` + r.subjects + ` IS 'MeterStore subject registry: pseudonymous reference to natural id. ` +
			`Deleting a row anonymises every reading carrying its reference (§ 60 Abs. 6 MsbG).'`,
		`CREATE INDEX IF NOT EXISTS ` + quote(yearIndex) + ` ON ` + r.subjects + ` (collection_year)`,
		`CREATE INDEX IF NOT EXISTS ` + quote(collectIndex) + ` ON ` + r.subjects + ` (collected_at)`,
		`CREATE TABLE IF NOT EXISTS ` + r.audit + ` (
			id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			at          timestamptz NOT NULL,
			legal_basis text NOT NULL CHECK (legal_basis <> ''),
			actor       text NOT NULL CHECK (actor <> ''),
			retention   text NOT NULL,
			removed     bigint NOT NULL CHECK (removed >= 0),
			recorded_at timestamptz NOT NULL DEFAULT now()
		)`,
		`COMMENT ON TABLE ` + r.audit + ` IS 'MeterStore retention sweeps: one row per sweep, ` +
			`at the instant the sweep was run for, with its legal basis, actor, retention and number of references removed.'`,
		`CREATE TABLE IF NOT EXISTS ` + r.erasures + ` (
			id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			at           timestamptz NOT NULL DEFAULT now(),
			action       text NOT NULL CHECK (action IN ('erase', 'unsuppress')),
			subject_hash bytea NOT NULL CHECK (octet_length(subject_hash) = 32),
			legal_basis  text NOT NULL CHECK (legal_basis <> ''),
			actor        text NOT NULL CHECK (actor <> ''),
			removed      bigint NOT NULL CHECK (removed >= 0)
		)`,
		`COMMENT ON TABLE ` + r.erasures + ` IS 'MeterStore erasures and lifted suppressions: one row per request, ` +
			`with the subject as HMAC-SHA256 under the deployment''s subject key, never its natural id; removed counts ` +
			`the mapping rows an erase deleted, or the suppression an unsuppress lifted (0 or 1).'`,
		`CREATE TABLE IF NOT EXISTS ` + r.suppressed + ` (
			subject_hash  bytea PRIMARY KEY CHECK (octet_length(subject_hash) = 32),
			suppressed_at timestamptz NOT NULL DEFAULT now()
		)`,
		`COMMENT ON TABLE ` + r.suppressed + ` IS 'MeterStore suppression list: erased subjects, as HMAC-SHA256 under ` +
			`the deployment''s subject key; the registry issues them no new reference.'`,
		`CREATE TABLE IF NOT EXISTS ` + r.keyRow + ` (
			singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
			fingerprint bytea NOT NULL CHECK (octet_length(fingerprint) = 32),
			recorded_at timestamptz NOT NULL DEFAULT now()
		)`,
		`COMMENT ON TABLE ` + r.keyRow + ` IS 'MeterStore: fingerprint of the subject key the suppression list was ` +
			`written with, so that a registry given another key is refused rather than silently ignoring the list.'`,
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// duplicateObject reports whether code is a lost race of two CREATEs.
func duplicateObject(code string) bool {
	switch code {
	case "23505", // unique_violation, in a system catalog
		"42P06", // duplicate_schema
		"42P07", // duplicate_table
		"42710": // duplicate_object
		return true
	}
	return false
}

// ident returns the quoted, schema-qualified name of a relation.
func (r *Registry) ident(name string) string { return pgx.Identifier{r.schema, name}.Sanitize() }

// quote returns a quoted identifier.
func quote(name string) string { return pgx.Identifier{name}.Sanitize() }
