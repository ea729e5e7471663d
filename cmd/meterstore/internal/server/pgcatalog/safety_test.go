package pgcatalog

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/meterstore/meterstore/internal/pgtest"
)

// TestForbiddenFunctions runs functions that reach files, large objects,
// settings, other databases or time through Run: each is refused by the
// allowlist before PostgreSQL sees it, with a *RefusedError naming the
// function (PostgreSQL's own refusal, or an answer, would fail the test).
// set_config and pg_sleep would run for the reader role: without the
// allowlist they answer.
func TestForbiddenFunctions(t *testing.T) {
	s := openStore(t, pgtest.NewDB(t), "power")
	c := openCatalog(t, s, Options{})
	for _, tc := range []struct{ sql, fn string }{
		{"SELECT pg_read_file('/etc/passwd') FROM pg_catalog.pg_class LIMIT 1", "pg_read_file"},
		{"SELECT pg_catalog.pg_read_binary_file('/etc/passwd'), version()", "pg_catalog.pg_read_binary_file"},
		{"SELECT pg_ls_dir('.'), current_user", "pg_ls_dir"},
		{"SELECT lo_import('/etc/passwd'), current_user", "lo_import"},
		{"SELECT lo_get(1), current_user", "lo_get"},
		// PostgreSQL 15 creates a large object even in a read-only
		// transaction: only the allowlist stops this one.
		{"SELECT lo_create(0), current_user", "lo_create"},
		{"SELECT dblink('dbname=postgres', 'select 1'), current_user", "dblink"},
		{"SELECT set_config('application_name', 'x', false), current_user", "set_config"},
		{"SELECT pg_sleep(0.01), current_user", "pg_sleep"},
		{"SELECT query_to_xml('select 1', true, true, ''), current_user", "query_to_xml"},
		{"SELECT pg_backend_pid(), current_user", "pg_backend_pid"},
		{"SELECT pg_total_relation_size('power.readings'::regclass)", "pg_total_relation_size"},
		{"SELECT now() AT TIME ZONE set_config('application_name', 'x', false) FROM pg_class", "set_config"},
	} {
		_, rows, _, err := collect(t, c, tc.sql)
		var re *RefusedError
		if !errors.As(err, &re) || re.Function != tc.fn {
			t.Errorf("%s: %v %v, want the refusal of %s", tc.sql, rows, err, tc.fn)
			continue
		}
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" {
			t.Errorf("%s: %v, want a PgError 42501", tc.sql, err)
		}
	}
	if c.Handles("SELECT set_config('application_name', 'x', false), current_user") {
		t.Error("Handles takes set_config")
	}
}

// TestReaderRole checks what holds beneath the allowlist: the reader role
// is no superuser, reads no MeterStore relation (a statement that reached
// one would be refused, never answered with an empty shape), and writes
// nothing.
func TestReaderRole(t *testing.T) {
	s := openStore(t, pgtest.NewDB(t), "power", "gas")
	c := openCatalog(t, s, Options{})
	var super, member bool
	if err := c.pool.QueryRow(t.Context(), "SELECT rolsuper, EXISTS (SELECT 1 FROM pg_auth_members WHERE member = r.oid) FROM pg_roles r WHERE rolname = current_user").Scan(&super, &member); err != nil {
		t.Fatal(err)
	}
	if super || member {
		t.Fatalf("reader role: superuser %v, member of a role %v", super, member)
	}
	for sql, code := range map[string]string{
		"SELECT * FROM power.readings":             "42501",
		"SELECT count(*) FROM gas.completeness":    "42501",
		"SELECT pg_read_file('/etc/passwd')":       "42501",
		"CREATE TABLE power.x (a int)":             "25006",
		"SELECT set_config('role', 'x', false)":    "22023",
		"SELECT count(*) FROM pg_catalog.pg_class": "",
	} {
		_, err := c.pool.Exec(t.Context(), sql)
		var pe *pgconn.PgError
		switch {
		case code == "" && err != nil:
			t.Errorf("%s: %v", sql, err)
		case code != "" && (!errors.As(err, &pe) || pe.Code != code):
			t.Errorf("%s: %v, want SQLSTATE %s", sql, err, code)
		}
	}
	// Through Run, a statement over a MeterStore relation is refused
	// before PostgreSQL is asked.
	_, rows, _, err := collect(t, c, "SELECT * FROM power.readings")
	var re *RefusedError
	if !errors.As(err, &re) || rows != nil {
		t.Errorf("Run over power.readings: %v %v", rows, err)
	}
}

// TestSession checks version(), current_database(), current_schema() and
// ServerVersion.
func TestSession(t *testing.T) {
	s := openStore(t, pgtest.NewDB(t), "power")
	c := openCatalog(t, s, Options{Version: "1.2.3", User: testUser})
	ps, err := s.PostgresServer(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if c.ServerVersion() != ps.Version {
		t.Errorf("ServerVersion %q, the cluster's %q", c.ServerVersion(), ps.Version)
	}
	num, _, _ := strings.Cut(ps.Version, " ")
	for _, sql := range []string{"SELECT version()", "select pg_catalog.version()", "SELECT upper(version()) AS version"} {
		cols, rows, _, err := collect(t, c, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		want := "PostgreSQL " + num + " (MeterStore 1.2.3) on "
		if !slices.Equal(cols, []string{"version"}) || len(rows) != 1 || !strings.HasPrefix(strings.ToLower(rows[0][0]), strings.ToLower(want)) {
			t.Errorf("%s: %q %q, want a version starting %q", sql, cols, rows, want)
		}
	}
	cols, rows, _, err := collectAs(t, withTestUser(t.Context(), "reporting"), c,
		"SELECT current_database(), current_schema(), current_user, session_user, user, current_role, current_catalog")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{c.Database(), "NULL", "reporting", "reporting", "reporting", "reporting", c.Database()}}
	wantCols := []string{"current_database", "current_schema", "current_user", "session_user", "user", "current_role", "current_catalog"}
	if fmt.Sprint(rows) != fmt.Sprint(want) || !slices.Equal(cols, wantCols) {
		t.Errorf("%q: %q, want %q %q", cols, rows, wantCols, want)
	}
	// Without the session's user, its name is refused, never answered
	// with the reader role's.
	_, rows, _, err = collect(t, c, "SELECT current_user")
	var re *RefusedError
	if !errors.As(err, &re) {
		t.Errorf("current_user without the session's user: %v %v", rows, err)
	}
	// A privilege function would answer for the reader role.
	if c.Handles("SELECT has_table_privilege('power.readings', 'SELECT')") {
		t.Error("Handles takes has_table_privilege")
	}
}

// TestInformationSchema checks that information_schema, which shows only
// what the role holds a privilege on, lists the shapes to the reader
// role, with PostgreSQL's names of their types.
func TestInformationSchema(t *testing.T) {
	s := openStore(t, pgtest.NewDB(t), "power", "gas")
	c := openCatalog(t, s, Options{})
	_, rows, _, err := collect(t, c, "SELECT table_schema, table_name, table_type FROM information_schema.tables WHERE table_schema IN ('power', 'gas') ORDER BY 1, 2")
	want := "[[gas completeness BASE TABLE] [gas readings BASE TABLE] [gas readings_versions BASE TABLE] [power completeness BASE TABLE] [power readings BASE TABLE] [power readings_versions BASE TABLE]]"
	if err != nil || fmt.Sprint(rows) != want {
		t.Errorf("tables %v %v, want %s", rows, err, want)
	}
	_, rows, _, err = collect(t, c, `SELECT column_name, data_type, numeric_precision, numeric_scale FROM information_schema.columns
		WHERE table_schema = 'power' AND table_name = 'readings' AND column_name IN ('malo_id', 'from', 'value', 'version', 'balancing_day') ORDER BY ordinal_position`)
	want = "[[malo_id text NULL NULL] [from timestamp with time zone NULL NULL] [value numeric 18 6] [version numeric 20 0] [balancing_day date NULL NULL]]"
	if err != nil || fmt.Sprint(rows) != want {
		t.Errorf("columns %v %v, want %s", rows, err, want)
	}
}
