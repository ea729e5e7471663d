// Package pgcatalog answers the catalog queries PostgreSQL clients send
// (psql's \dt and \d, pgjdbc's DatabaseMetaData, psycopg's type lookups,
// SQLAlchemy's inspector, version() and current_schema()) for meterstore
// serve's PostgreSQL wire protocol.
//
// It answers them with PostgreSQL itself: a shape database in the
// deployment's own cluster holds, for each declared table, a schema of
// that name with empty relations readings, readings_versions and
// completeness, and a schema system with the system tables, each with
// the columns and types a statement over it answers through the wire.
// A catalog statement runs there, as a role that may read the catalog
// and nothing else, in a read-only transaction, so that a client gets
// the answer PostgreSQL gives for those shapes. Statements over the data
// go to the store (store.Prepare), never here.
//
// The shape database is what clients see as the database:
// current_database() answers its name (by default the store's database
// with _shape appended), since the relations it lists are the
// deployment's and nothing else.
package pgcatalog

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/store"
)

// Options configure a Catalog; the zero value takes the defaults.
type Options struct {
	// User returns the session's user, the token's name, from the context
	// a statement is Run or Described with: current_user, session_user,
	// current_role and user answer it. Nil, or false from it, a statement
	// that names them is refused: the catalog runs as its own role, whose
	// name is not the session's.
	User func(context.Context) (string, bool)
	// Database is the shape database; empty, the store's database with
	// _shape appended.
	Database string
	// Role is the role catalog statements run as; empty, the shape
	// database's name with _reader appended.
	Role string
	// Timeout bounds each statement (statement_timeout); 0 is 10 s.
	Timeout time.Duration
	// MaxRows and MaxBytes bound one answer; 0 is 100 000 rows and 64 MiB.
	MaxRows  int
	MaxBytes int64
	// MaxConns bounds the connections to the shape database; 0 is 4.
	MaxConns int32
	// Version is MeterStore's version, which version() names.
	Version string
	Logger  *slog.Logger
}

// A Catalog runs catalog statements on the shape database. It is safe for
// concurrent use.
type Catalog struct {
	o             Options
	pool          *pgxpool.Pool
	schemas       map[string]bool // the declared tables' schemas and system, lowercase
	serverVersion string
	version       string // what version() answers
}

// A GrantError reports that the store's role may not create what the
// Catalog needs: Need names the privilege to grant it (CREATEDB,
// CREATEROLE). Catalog statements are then refused.
type GrantError struct {
	Role string // the store's role
	Need string
	Err  error
}

// Error names the role and the grant it needs.
func (e *GrantError) Error() string {
	return fmt.Sprintf("pgcatalog: role %s may not create the catalog's shapes: grant it %s (ALTER ROLE %s %s): %v",
		e.Role, e.Need, ident(e.Role), e.Need, e.Err)
}

// Unwrap returns PostgreSQL's refusal.
func (e *GrantError) Unwrap() error { return e.Err }

// Open builds the shape database of s (creating it and the reader role if
// absent, rebuilding the schemas that differ from the declared tables')
// and connects to it as the reader role.
func Open(ctx context.Context, s *store.Store, o Options) (*Catalog, error) {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxRows <= 0 {
		o.MaxRows = 100_000
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 64 << 20
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 4
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	admin := s.ServiceDB().Pool
	base := admin.Config().ConnConfig
	if o.Database == "" {
		o.Database = bounded(base.Database, "_shape")
	}
	if o.Role == "" {
		o.Role = bounded(o.Database, "_reader")
	}
	shapes, skipped, err := shapesOf(ctx, s)
	if err != nil {
		return nil, err
	}
	for _, t := range skipped {
		o.Logger.Warn("pgcatalog: a table could not be described; its shapes are kept as they were", "table", t)
	}
	password, err := readerPassword(o.Role, base.Password)
	if err != nil {
		return nil, err
	}
	if o.Database == base.Database {
		return nil, fmt.Errorf("pgcatalog: the shape database cannot be the store's own, %s", o.Database)
	}
	// One process of the deployment at a time makes the database, the
	// role and the shapes: PostgreSQL refuses concurrent changes of one
	// role or database ("tuple concurrently updated").
	lock, err := admin.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgcatalog: %w", err)
	}
	defer unlock(ctx, lock)
	if _, err := lock.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(openLock)); err != nil {
		return nil, fmt.Errorf("pgcatalog: wait for another process's Open: %w", err)
	}
	if err := ensureDatabase(ctx, lock, base.User, o.Database, base.Database); err != nil {
		return nil, err
	}
	if err := ensureRole(ctx, lock, base.User, o.Role, password); err != nil {
		return nil, err
	}
	owner := base.Copy()
	owner.Database = o.Database
	conn, err := pgx.ConnectConfig(ctx, owner)
	if err != nil {
		return nil, fmt.Errorf("pgcatalog: connect to %s: %w", o.Database, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := build(ctx, conn, shapes, skipped, o.Role); err != nil {
		return nil, fmt.Errorf("pgcatalog: build the shapes in %s: %w", o.Database, err)
	}
	for _, stmt := range []string{
		"REVOKE ALL ON DATABASE " + ident(o.Database) + " FROM PUBLIC",
		"GRANT CONNECT ON DATABASE " + ident(o.Database) + " TO " + ident(o.Role),
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return nil, fmt.Errorf("pgcatalog: %s: %w", stmt, err)
		}
	}
	c := &Catalog{o: o, schemas: map[string]bool{SystemSchema: true}}
	for _, t := range s.Tables() {
		c.schemas[strings.ToLower(t)] = true
	}
	if c.pool, err = c.connect(ctx, base, password); err != nil {
		return nil, err
	}
	var full string
	if err := c.pool.QueryRow(ctx, "SELECT current_setting('server_version'), version()").Scan(&c.serverVersion, &full); err != nil {
		c.pool.Close()
		return nil, fmt.Errorf("pgcatalog: server version: %w", err)
	}
	c.version = meterstoreVersion(c.serverVersion, full, o.Version)
	return c, nil
}

// connect opens the pool of the reader role on the shape database, each
// session with no schema on its search path (so that current_schema() is
// null: a statement over the wire has no default table), read only, and
// bounded in time.
func (c *Catalog) connect(ctx context.Context, base *pgx.ConnConfig, password string) (*pgxpool.Pool, error) {
	pc, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, fmt.Errorf("pgcatalog: %w", err)
	}
	cc := base.Copy()
	cc.User, cc.Password, cc.Database = c.o.Role, password, c.o.Database
	cc.RuntimeParams = map[string]string{
		"application_name":                    "meterstore-pgcatalog",
		"search_path":                         "",
		"default_transaction_read_only":       "on",
		"statement_timeout":                   fmt.Sprint(c.o.Timeout.Milliseconds()),
		"lock_timeout":                        fmt.Sprint(c.o.Timeout.Milliseconds()),
		"idle_in_transaction_session_timeout": fmt.Sprint(2 * c.o.Timeout.Milliseconds()),
		"TimeZone":                            "UTC",
		"standard_conforming_strings":         "on",
	}
	pc.ConnConfig, pc.MaxConns = cc, c.o.MaxConns
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("pgcatalog: connect as %s: %w", c.o.Role, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgcatalog: connect to %s as %s: %w", c.o.Database, c.o.Role, err)
	}
	return pool, nil
}

// Close closes the connections to the shape database; the database stays.
func (c *Catalog) Close() { c.pool.Close() }

// Database returns the shape database's name, which current_database()
// answers.
func (c *Catalog) Database() string { return c.o.Database }

// ServerVersion returns the server_version of the cluster the shapes are
// in: clients choose their catalog queries by it, so it is the real one.
func (c *Catalog) ServerVersion() string { return c.serverVersion }

// Handles reports whether sql is a catalog statement the Catalog answers:
// one SELECT that reads pg_catalog or information_schema or calls a
// catalog or session function, names no MeterStore relation, and calls
// nothing outside the allowlist.
func (c *Catalog) Handles(sql string) bool {
	r := analyse(sql, c.schemas)
	return r.handled()
}

// openLock keys the advisory lock, in the store's database, under which
// one Open at a time makes the shape database and the reader role.
const openLock = shapesLock + 1

// A querier is a connection of the store's role.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// unlock releases the lock of Open and the connection holding it; a
// connection that cannot release it is closed, which does.
func unlock(ctx context.Context, c *pgxpool.Conn) {
	ctx = context.WithoutCancel(ctx)
	if _, err := c.Exec(ctx, "SELECT pg_advisory_unlock($1)", int64(openLock)); err != nil {
		c.Conn().Close(ctx)
	}
	c.Release()
}

// ensureDatabase creates the shape database of the store's database
// storeDB unless it exists, and marks it as such: a database of that name
// without the mark is someone else's, and is refused rather than
// rebuilt (which drops its schemas).
func ensureDatabase(ctx context.Context, admin querier, user, name, storeDB string) error {
	mark := "MeterStore: the shapes of the relations of " + storeDB + " as its PostgreSQL protocol shows them"
	marked := func() (exists bool, ok bool, err error) {
		var comment *string
		err = admin.QueryRow(ctx, "SELECT count(*) > 0, max(shobj_description(oid, 'pg_database')) FROM pg_database WHERE datname = $1", name).Scan(&exists, &comment)
		if err != nil {
			return false, false, fmt.Errorf("pgcatalog: look up database %s: %w", name, err)
		}
		return exists, comment != nil && *comment == mark, nil
	}
	refused := fmt.Errorf("pgcatalog: database %s exists and is not the shape database of %s: refusing to rebuild it", name, storeDB)
	exists, ok, err := marked()
	switch {
	case err != nil:
		return err
	case exists && ok:
		return nil
	case exists:
		return refused
	}
	_, err = admin.Exec(ctx, "CREATE DATABASE "+ident(name))
	var pe *pgconn.PgError
	switch {
	case err == nil:
		_, err = admin.Exec(ctx, "COMMENT ON DATABASE "+ident(name)+" IS '"+strings.ReplaceAll(mark, "'", "''")+"'")
		if err != nil {
			return fmt.Errorf("pgcatalog: mark database %s: %w", name, err)
		}
		return nil
	case errors.As(err, &pe) && pe.Code == "42P04":
		// Created meanwhile: by another process of the deployment,
		// which marks it at once, or by someone else.
		for range 20 {
			if _, ok, err := marked(); err != nil || ok {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
		return refused
	case errors.As(err, &pe) && pe.Code == "42501":
		return &GrantError{Role: user, Need: "CREATEDB", Err: err}
	}
	return fmt.Errorf("pgcatalog: create database %s: %w", name, err)
}

// ensureRole creates the reader role unless it exists, and in any case
// makes it a plain login role with password, a member of no role, so
// that it holds only what the shape database grants it.
func ensureRole(ctx context.Context, admin querier, user, role, password string) error {
	grantErr := func(err error) error {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42501" {
			return &GrantError{Role: user, Need: "CREATEROLE", Err: err}
		}
		return fmt.Errorf("pgcatalog: role %s: %w", role, err)
	}
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", role).Scan(&exists); err != nil {
		return grantErr(err)
	}
	attrs := " LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS PASSWORD '" + password + "'"
	if !exists {
		_, err := admin.Exec(ctx, "CREATE ROLE "+ident(role)+attrs)
		var pe *pgconn.PgError
		if err != nil && !(errors.As(err, &pe) && pe.Code == "42710") { // created meanwhile
			return grantErr(err)
		}
	}
	if _, err := admin.Exec(ctx, "ALTER ROLE "+ident(role)+attrs); err != nil {
		return grantErr(err)
	}
	var members int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member WHERE r.rolname = $1", role).Scan(&members); err != nil {
		return grantErr(err)
	}
	if members > 0 {
		return fmt.Errorf("pgcatalog: role %s is a member of %d roles: it must hold only what the shape database grants it", role, members)
	}
	return nil
}

// readerPassword is the reader role's password: derived from the store's
// own, so that every process of a deployment sets the same one and none
// locks out another's connections; without one (a trusted or peer
// connection) a random one, which only this process needs.
func readerPassword(role, storePassword string) (string, error) {
	if storePassword != "" {
		h := sha256.Sum256([]byte("meterstore pgcatalog reader\x00" + role + "\x00" + storePassword))
		return hex.EncodeToString(h[:]), nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("pgcatalog: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// bounded appends suffix to name within PostgreSQL's 63 bytes of a name,
// cutting name and appending a hash of it where it would not fit.
func bounded(name, suffix string) string {
	const max = 63
	if len(name)+len(suffix) <= max {
		return name + suffix
	}
	h := sha256.Sum256([]byte(name))
	tag := "_" + hex.EncodeToString(h[:4])
	return name[:max-len(suffix)-len(tag)] + tag + suffix
}

// meterstoreVersion is what version() answers: PostgreSQL's version
// number, so that clients that parse it read the one whose catalog they
// query, and MeterStore's name, so that nobody takes the server for a
// plain PostgreSQL.
func meterstoreVersion(serverVersion, full, ours string) string {
	if ours == "" {
		ours = "dev"
	}
	num, _, _ := strings.Cut(serverVersion, " ")
	v := "PostgreSQL " + num + " (MeterStore " + ours + ")"
	if _, platform, ok := strings.Cut(full, " on "); ok {
		v += " on " + platform
	}
	return v
}
