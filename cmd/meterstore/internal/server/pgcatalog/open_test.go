package pgcatalog

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/meterstore/meterstore/internal/pgtest"
)

// relationsOf lists the shape database's relations and their oids, as
// schema.relation.
func relationsOf(t *testing.T, c *Catalog) map[string]string {
	t.Helper()
	_, rows, _, err := collect(t, c, `SELECT n.nspname || '.' || c.relname, c.oid FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind = 'r' AND n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rows {
		out[r[0]] = r[1]
	}
	return out
}

// TestRebuild opens the Catalog of a deployment again after its tables
// changed: the shapes of a table still declared are kept as they were
// (the same oids), those of a table no longer declared are dropped, a
// new table's are made, and the public schema is gone.
func TestRebuild(t *testing.T) {
	url := pgtest.NewDB(t)
	s1 := openStore(t, url, "power", "gas")
	c1 := openCatalog(t, s1, Options{})
	before := relationsOf(t, c1)
	want := []string{"gas.completeness", "gas.readings", "gas.readings_versions", "power.completeness", "power.readings", "power.readings_versions",
		"system.config", "system.resolution", "system.snapshots", "system.tables"}
	if got := keys(before); !slices.Equal(got, want) {
		t.Fatalf("relations %q, want %q", got, want)
	}
	c1.Close()

	s2 := openStore(t, url, "power", "heat")
	c2, err := Open(t.Context(), s2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c2.Close)
	after := relationsOf(t, c2)
	want = []string{"heat.completeness", "heat.readings", "heat.readings_versions", "power.completeness", "power.readings", "power.readings_versions",
		"system.config", "system.resolution", "system.snapshots", "system.tables"}
	if got := keys(after); !slices.Equal(got, want) {
		t.Fatalf("relations after the change %q, want %q", got, want)
	}
	for _, r := range []string{"power.readings", "system.tables"} {
		if before[r] != after[r] {
			t.Errorf("%s was made anew (oid %s, then %s) though its shape is the same", r, before[r], after[r])
		}
	}
	_, rows, _, err := collect(t, c2, "SELECT nspname FROM pg_catalog.pg_namespace WHERE nspname !~ '^pg_' AND nspname <> 'information_schema' ORDER BY 1")
	if err != nil || fmt.Sprint(rows) != "[[heat] [power] [system]]" {
		t.Errorf("schemas %v %v, want heat, power, system", rows, err)
	}
	// A shape that differs from its table is made anew.
	owner := adminOn(t, s2, c2.Database())
	if _, err := owner.Exec(t.Context(), "ALTER TABLE power.readings DROP COLUMN subject_id"); err != nil {
		t.Fatal(err)
	}
	c3, err := Open(t.Context(), s2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c3.Close)
	_, rows, _, err = collect(t, c3, "SELECT a.attname FROM pg_catalog.pg_attribute a WHERE a.attrelid = 'power.readings'::pg_catalog.regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum DESC LIMIT 1")
	if err != nil || fmt.Sprint(rows) != "[[subject_id]]" {
		t.Errorf("last column of power.readings after the rebuild: %v %v", rows, err)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestGrantError opens the Catalog of a store whose role may not create
// a database: Open fails with a *GrantError naming CREATEDB.
func TestGrantError(t *testing.T) {
	url := pgtest.NewDB(t)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.ConnectConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(t.Context())
	role := bounded(cfg.Database, "_plain")
	for _, stmt := range []string{
		"CREATE ROLE " + ident(role) + " LOGIN NOCREATEDB NOCREATEROLE PASSWORD 'x'",
		"ALTER DATABASE " + ident(cfg.Database) + " OWNER TO " + ident(role),
		"ALTER SCHEMA public OWNER TO " + ident(role),
	} {
		if _, err := admin.Exec(t.Context(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	t.Cleanup(func() {
		// The store's tables are the role's: the database goes first.
		if _, err := admin.Exec(t.Context(), "REASSIGN OWNED BY "+ident(role)+" TO CURRENT_USER"); err == nil {
			admin.Exec(t.Context(), "DROP ROLE "+ident(role))
		}
	})
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	u.User = neturl.UserPassword(role, "x")
	s := openStore(t, u.String(), "power")
	_, err = Open(t.Context(), s, Options{})
	var ge *GrantError
	if !errors.As(err, &ge) || ge.Need != "CREATEDB" || ge.Role != role {
		t.Fatalf("Open: %v, want a GrantError naming CREATEDB for %s", err, role)
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "CREATEDB") {
		t.Errorf("%v does not name the grant", err)
	}
}

// TestBounds checks that an answer beyond MaxRows is refused, and that
// the connection it ran on is not reused mid-answer.
func TestBounds(t *testing.T) {
	s := openStore(t, pgtest.NewDB(t), "power")
	c := openCatalog(t, s, Options{MaxRows: 5, MaxConns: 1})
	_, rows, _, err := collect(t, c, "SELECT relname FROM pg_catalog.pg_class")
	var re *RefusedError
	if !errors.As(err, &re) || len(rows) != 5 {
		t.Fatalf("%d rows, %v; want 5 rows and a refusal", len(rows), err)
	}
	_, rows, _, err = collect(t, c, "SELECT relname FROM pg_catalog.pg_class WHERE relname = 'pg_class'")
	if err != nil || fmt.Sprint(rows) != "[[pg_class]]" {
		t.Errorf("after the refusal: %v %v", rows, err)
	}
}

// TestDescribeAndBinary describes a parameterised catalog statement and
// runs it with a binary parameter and binary results, as pgjdbc and
// psycopg may: the bytes pass through as the client sent them.
func TestDescribeAndBinary(t *testing.T) {
	s := openStore(t, pgtest.NewDB(t), "power", "gas")
	c := openCatalog(t, s, Options{})
	sql := "SELECT c.relname, c.relnatts FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relnatts > $2 ORDER BY 1"
	params, fds, err := c.Describe(t.Context(), sql, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(params, []uint32{pgtype.NameOID, pgtype.Int2OID}) || len(fds) != 2 ||
		string(fds[0].Name) != "relname" || fds[0].DataTypeOID != pgtype.NameOID || fds[1].DataTypeOID != pgtype.Int2OID {
		t.Fatalf("Describe: %v %+v", params, fds)
	}
	var got []string
	tag, err := c.Run(t.Context(), sql, [][]byte{[]byte("gas"), {0, 12}}, []uint32{pgtype.TextOID, pgtype.Int2OID}, []int16{0, 1}, []int16{0, 1},
		func(fds []pgproto3.FieldDescription) error {
			if len(fds) != 2 || fds[1].Format != 1 {
				return fmt.Errorf("fields %+v", fds)
			}
			return nil
		},
		func(vals [][]byte) error {
			got = append(got, fmt.Sprintf("%s:%v", vals[0], vals[1]))
			return nil
		})
	if err != nil || tag != "SELECT 2" {
		t.Fatalf("Run: %q %v", tag, err)
	}
	if want := []string{"readings:[0 15]", "readings_versions:[0 15]"}; !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
	// PostgreSQL's own errors come back as it sent them.
	_, _, _, err = collect(t, c, "SELECT relname FROM pg_catalog.pg_class WHERE relname = $1::int")
	if err == nil || !strings.Contains(err.Error(), "SQLSTATE") {
		t.Errorf("a statement PostgreSQL refuses: %v", err)
	}
}

// TestForeignDatabase refuses to build the shapes in a database that is
// not a shape database (building drops its schemas): one of that name
// without the mark, and the store's own.
func TestForeignDatabase(t *testing.T) {
	url := pgtest.NewDB(t)
	s := openStore(t, url, "power")
	admin := s.ServiceDB().Pool
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	name := bounded(cfg.Database, "_other")
	if _, err := admin.Exec(t.Context(), "CREATE DATABASE "+ident(name)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)") })
	other := adminOn(t, s, name)
	if _, err := other.Exec(t.Context(), "CREATE SCHEMA keep"); err != nil {
		t.Fatal(err)
	}
	for _, db := range []string{name, cfg.Database} {
		if c, err := Open(t.Context(), s, Options{Database: db, Role: bounded(cfg.Database, "_r")}); err == nil {
			c.Close()
			t.Errorf("Open in %s: no error", db)
		}
	}
	var n int
	if err := other.QueryRow(t.Context(), "SELECT count(*) FROM pg_namespace WHERE nspname = 'keep'").Scan(&n); err != nil || n != 1 {
		t.Errorf("the schema keep: %d, %v", n, err)
	}
	admin.Exec(t.Context(), "DROP ROLE IF EXISTS "+ident(bounded(cfg.Database, "_r")))
}
