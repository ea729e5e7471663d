package query

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOnlyASingleSelectRuns(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	out := filepath.Join(t.TempDir(), "out")
	for _, sql := range []string{
		`CREATE TABLE x (i INTEGER)`,
		`CREATE VIEW v AS SELECT 1`,
		`CREATE MACRO m(a) AS a`,
		`INSERT INTO tiers.hot SELECT * FROM tiers.hot`,
		`UPDATE readings SET value = 0`,
		`DELETE FROM readings`,
		`DROP VIEW readings`,
		`ALTER TABLE tiers.hot ADD COLUMN y INTEGER`,
		`COPY (SELECT 1) TO '` + out + `'`,
		`COPY tiers.hot FROM '/etc/passwd'`,
		`ATTACH '` + out + `.db' AS other`,
		`DETACH memory`,
		`INSTALL httpfs`,
		`LOAD httpfs`,
		`PRAGMA version`,
		`SET enable_external_access = true`,
		`RESET lock_configuration`,
		`SET VARIABLE x = 1`,
		`CALL pragma_version()`,
		`EXPORT DATABASE '` + out + `'`,
		`EXPLAIN SELECT 1`,
		`CHECKPOINT`,
		`VACUUM`,
		`BEGIN TRANSACTION`,
		`USE system`,
		`PREPARE p AS SELECT 1`,
		`SELECT 1; SELECT 2`,
		`SELECT 1; DROP VIEW readings`,
		`SELECT 1; COPY (SELECT 1) TO '` + out + `'`,
	} {
		_, err := queryOf(t.Context(), e, sql)
		if !errors.Is(err, ErrNotReadOnly) {
			t.Errorf("%s: %v, want %v", sql, err, ErrNotReadOnly)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused statement wrote %s: %v", out, err)
	}
	if calls := s.Calls(); len(calls) != 0 {
		t.Fatalf("a refused statement read the tiers: %v", calls)
	}
	// Read-only forms of SELECT are fine.
	for _, sql := range []string{
		`FROM readings WHERE "from" >= '2026-03-01 00:00:00Z' LIMIT 1`,
		`DESCRIBE readings`,
		`SUMMARIZE SELECT value FROM readings WHERE "from" >= '2026-03-01 00:00:00Z'`,
		`WITH x AS (SELECT 1 AS i) SELECT * FROM x`,
		`SELECT 1 UNION ALL SELECT 2`,
		`VALUES (1), (2)`,
		`SELECT 1;`,
		`-- a comment
		 SELECT 1`,
	} {
		if _, err := queryOf(t.Context(), e, sql); err != nil {
			t.Errorf("%s: %v", sql, err)
		}
	}
}

func TestNoOtherFileIsReadable(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	// A Parquet file outside the plan, and a planned one.
	other := filepath.Join(t.TempDir(), "other.parquet")
	writeParquet(t, s.tab, other, quarterHours(5, jan2026, 4))
	planned := s.files[0].path
	secret := filepath.Join(t.TempDir(), "secret.csv")
	if err := os.WriteFile(secret, []byte("a,b\n1,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	written := filepath.Join(t.TempDir(), "written.csv")
	for _, sql := range []string{
		`SELECT * FROM read_csv('/etc/passwd')`,
		`SELECT * FROM read_csv('` + secret + `')`,
		`SELECT * FROM '` + secret + `'`,
		`SELECT * FROM read_text('/etc/hostname')`,
		`SELECT * FROM read_blob('/etc/hostname')`,
		`SELECT * FROM read_parquet('` + other + `')`,
		`SELECT * FROM read_parquet('` + filepath.Dir(planned) + `/*.parquet')`,
		`SELECT * FROM glob('/etc/*')`,
		`SELECT * FROM read_json('/etc/os-release')`,
		`SELECT * FROM read_csv('https://example.com/x.csv')`,
		`SELECT * FROM query('COPY (SELECT 1) TO ''` + written + `''')`,
		`SELECT * FROM query_table('` + secret + `')`,
		`SELECT * FROM sniff_csv('/etc/passwd')`,
		`SELECT * FROM parquet_metadata('` + other + `')`,
	} {
		res, err := queryOf(t.Context(), e, sql)
		if err == nil {
			t.Errorf("%s: read %d rows", sql, len(res.Rows))
			continue
		}
		// The statement's reach is refused, not the engine failing: a
		// client's fault (HTTP 4xx), logged as such.
		if !errors.Is(err, ErrNotPermitted) && !errors.Is(err, ErrInvalidQuery) {
			t.Errorf("%s: %v, want an error wrapping %v or %v", sql, err, ErrNotPermitted, ErrInvalidQuery)
		}
	}
	for _, sql := range []string{`SELECT * FROM duckdb_secrets()`, `SELECT * FROM read_text('/etc/hostname')`} {
		if _, err := queryOf(t.Context(), e, sql); !errors.Is(err, ErrNotPermitted) {
			t.Errorf("%s: %v, want an error wrapping %v", sql, err, ErrNotPermitted)
		}
	}
	if _, err := os.Stat(written); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a statement wrote %s: %v", written, err)
	}
	// The planned files are readable, in a statement that reads the
	// tiers: that is what the views do.
	if n := count(t, e, `SELECT count(*) FROM read_parquet('`+planned+`') WHERE EXISTS (FROM readings)`); n != 192 {
		t.Fatalf("planned file: %d rows", n)
	}
	if _, err := queryOf(t.Context(), e, `SELECT count(*) FROM read_parquet('`+planned+`')`); err == nil {
		t.Fatal("a statement that reads no tier read a cold file")
	}
	res := query(t, e, `SELECT current_setting('enable_external_access'), current_setting('lock_configuration'), current_setting('autoload_known_extensions'), current_setting('autoinstall_known_extensions')`)
	if got := strings.Join([]string{text(res.Rows[0][0]), text(res.Rows[0][1]), text(res.Rows[0][2]), text(res.Rows[0][3])}, " "); got != "false true false false" {
		t.Fatalf("settings: %s", got)
	}
}

func TestLockdownCannotBeUndone(t *testing.T) {
	inst, err := start(t.Context(), Settings{Threads: 1}, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.close()
	if err := inst.lockdown(t.Context(), nil, 0, "", ""); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`SET enable_external_access = true`,
		`SET allowed_paths = ['/etc/passwd']`,
		`SET allowed_directories = ['/']`,
		`SET lock_configuration = false`,
		`RESET allowed_paths`,
		`SET GLOBAL enable_external_access = true`,
		`SET threads = 4`,
	} {
		if _, err := inst.conn.ExecContext(t.Context(), stmt); err == nil {
			t.Errorf("%s: allowed after the lockdown", stmt)
		}
	}
	if _, err := inst.conn.ExecContext(t.Context(), `SELECT * FROM read_csv('/etc/passwd')`); err == nil {
		t.Error("read /etc/passwd after the lockdown")
	}
}

func TestNothingCrashes(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	for _, sql := range []string{
		``,
		`;`,
		`SELEC 1`,
		`SELECT * FROM nowhere`,
		`SELECT 1e400`,
		`SELECT 123456789012345678901234567890123456789012345678901234567890`,
		`SELECT 170141183460469231731687303715884105728::HUGEINT`,
		`SELECT CAST('infinity' AS TIMESTAMPTZ) + INTERVAL 1 DAY`,
		`SELECT 1/0, 1//0`,
		`SELECT meter_local_day(NULL), meter_gas_day(NULL), meter_balancing_day(NULL, NULL), meter_expected_intervals(NULL, NULL, NULL)`,
		`SELECT meter_balancing_day(TIMESTAMPTZ '2026-01-01 00:00:00+00', NULL)`,
		`SELECT meter_local_day('infinity'::TIMESTAMPTZ), meter_gas_day('-infinity'::TIMESTAMPTZ)`,
		`SELECT meter_expected_intervals('infinity'::DATE, 'PT15M', 'STROM')`,
		`SELECT meter_expected_intervals(DATE '5881580-07-10', 'PT15M', 'GAS')`,
		`SELECT meter_expected_intervals(DATE '-5877641-06-25', 'PT15M', 'GAS')`,
		`SELECT meter_expected_intervals(DATE '2026-03-29', 'P1M', 'STROM')`,
		`SELECT meter_balancing_day(TIMESTAMPTZ '2026-01-01 00:00:00+00', 'strom')`,
		`SELECT meter_local_day(1)`,
		`SELECT meter_local_day()`,
		`SELECT length(repeat('x', 50000000))`,
		`SELECT * FROM readings WHERE "from" > '` + strings.Repeat("9", 100000) + `'`,
		`SELECT * FROM readings WHERE "from" > 'infinity' AND "from" < '-infinity'`,
		`SELECT * FROM readings WHERE "from" IN (` + strings.Repeat("'2026-01-01 00:00:00Z', ", 2000) + `NULL)`,
		`SELECT $1`,
		`SELECT ?`,
		`SELECT * FROM readings WHERE "from" = ?`,
		`SELECT ` + strings.Repeat("(", 5000) + `1` + strings.Repeat(")", 5000),
		`SELECT json_serialize_sql('SELECT 1')`,
		`SELECT error('boom')`,
	} {
		// Errors are fine; a crash ends the test binary.
		queryOf(t.Context(), e, sql)
	}
	if n := count(t, e, `SELECT count(*) FROM readings`); n != 576 {
		t.Fatal(n)
	}
}
