package pgcatalog

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var day0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// openStore opens a deployment of the tables named, each with one day of
// one meter, on a fresh database; it returns the store and that
// database's URL.
func openStore(t *testing.T, url string, tables ...string) *store.Store {
	t.Helper()
	dir := t.TempDir()
	src := fmt.Sprintf("[postgres]\nurl = %q\ndata_dir = %q\n[warehouse]\nurl = %q\n", url, dir, "file://"+filepath.Join(dir, "wh"))
	for _, name := range tables {
		src += fmt.Sprintf("[[table]]\nname = %q\nresolutions = [\"PT15M\"]\n", name)
	}
	cfg, err := config.Parse([]byte(src), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.OpenConfig(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx := t.Context()
	if err := s.CreatePartitions(ctx, day0, day0.AddDate(0, 0, 2)); err != nil {
		t.Fatal(err)
	}
	for _, name := range tables {
		var rows []store.Reading
		for q := range 4 {
			from := day0.Add(time.Duration(q) * 15 * time.Minute)
			rows = append(rows, store.Reading{
				MaLo: "20000000008", OBIS: "1-1:1.29.0", Commodity: metering.Electricity, From: from, To: from.Add(15 * time.Minute),
				Value: series.Decimal(int64(1_000_000 * q)), Unit: metering.KilowattHour,
				Quality: metering.TrueValue, Resolution: metering.QuarterHour, Version: 1, VersionScope: "9900000000003:2026-03",
			})
		}
		if _, err := s.Write(ctx, name, rows); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// openCatalog opens the Catalog of s and drops its shape database and
// role when the test ends.
func openCatalog(t *testing.T, s *store.Store, o Options) *Catalog {
	t.Helper()
	c, err := Open(t.Context(), s, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropShapes(t, s, c) })
	return c
}

func dropShapes(t *testing.T, s *store.Store, c *Catalog) {
	c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := s.ServiceDB().Pool
	for _, stmt := range []string{
		"DROP DATABASE IF EXISTS " + ident(c.o.Database) + " WITH (FORCE)",
		"DROP ROLE IF EXISTS " + ident(c.o.Role),
	} {
		if _, err := admin.Exec(ctx, stmt); err != nil {
			t.Errorf("%s: %v", stmt, err)
		}
	}
}

// adminOn connects as the store's role to database name of the store's
// cluster.
func adminOn(t *testing.T, s *store.Store, name string) *pgxpool.Pool {
	t.Helper()
	pc, err := pgxpool.ParseConfig("")
	if err != nil {
		t.Fatal(err)
	}
	pc.ConnConfig = s.ServiceDB().Pool.Config().ConnConfig.Copy()
	pc.ConnConfig.Database = name
	pool, err := pgxpool.NewWithConfig(t.Context(), pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// collect runs sql through the Catalog with text parameters and returns
// its columns and rows as text.
func collect(t *testing.T, c *Catalog, sql string, params ...string) (cols []string, rows [][]string, tag string, err error) {
	t.Helper()
	return collectAs(t, t.Context(), c, sql, params...)
}

// testUserKey is the context key of withTestUser's user.
type testUserKey struct{}

// withTestUser returns ctx carrying user for testUser, as the protocol
// server's context carries its session's.
func withTestUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, testUserKey{}, user)
}

// testUser is an Options.User: the user of withTestUser.
func testUser(ctx context.Context) (string, bool) {
	u, ok := ctx.Value(testUserKey{}).(string)
	return u, ok
}

// collectAs is collect with the context ctx (withTestUser).
func collectAs(t *testing.T, ctx context.Context, c *Catalog, sql string, params ...string) (cols []string, rows [][]string, tag string, err error) {
	t.Helper()
	var ps [][]byte
	for _, p := range params {
		ps = append(ps, []byte(p))
	}
	tag, err = c.Run(ctx, sql, ps, nil, nil, nil,
		func(fds []pgproto3.FieldDescription) error {
			for _, f := range fds {
				cols = append(cols, string(f.Name))
			}
			return nil
		},
		func(vals [][]byte) error {
			row := make([]string, len(vals))
			for i, v := range vals {
				if v == nil {
					row[i] = "NULL"
				} else {
					row[i] = string(v)
				}
			}
			rows = append(rows, row)
			return nil
		})
	return cols, rows, tag, err
}

// direct runs sql on pool as collect does through the Catalog.
func direct(t *testing.T, pool *pgxpool.Pool, sql string, params ...string) (cols []string, rows [][]string, err error) {
	t.Helper()
	conn, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var ps [][]byte
	for _, p := range params {
		ps = append(ps, []byte(p))
	}
	rr := conn.Conn().PgConn().ExecParams(t.Context(), sql, ps, nil, nil, nil)
	for _, f := range rr.FieldDescriptions() {
		cols = append(cols, f.Name)
	}
	for rr.NextRow() {
		var row []string
		for _, v := range rr.Values() {
			if v == nil {
				row = append(row, "NULL")
			} else {
				row = append(row, string(v))
			}
		}
		rows = append(rows, row)
	}
	_, err = rr.Close()
	return cols, rows, err
}
