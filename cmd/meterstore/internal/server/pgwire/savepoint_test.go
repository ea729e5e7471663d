package pgwire

import (
	"testing"
)

// TestSavepoints: SAVEPOINT, RELEASE and ROLLBACK TO behave as in
// PostgreSQL for a read-only block: a failed statement after a savepoint
// is undone by rolling back to it (psycopg 3 inside SQLAlchemy relies on
// it), SET LOCAL made after it is undone, an unknown savepoint is 3B001,
// and outside a block 25P01.
func TestSavepoints(t *testing.T) {
	_, addr := testServer(t, Options{AllowPlaintext: true})
	conn, err := connect(t, addr, "reporting", testPassword, "disable")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	exec := func(sql, code string, status byte) {
		t.Helper()
		_, err := conn.Exec(t.Context(), sql)
		if got := codeOf(err); got != code || (code == "" && err != nil) {
			t.Errorf("%s: %v, want SQLSTATE %q", sql, err, code)
		}
		if got := conn.PgConn().TxStatus(); got != status {
			t.Errorf("%s: transaction status %c, want %c", sql, got, status)
		}
	}
	exec("SAVEPOINT a", "25P01", 'I')
	exec("BEGIN", "", 'T')
	exec("SAVEPOINT a", "", 'T')
	exec("SET LOCAL statement_timeout = '5s'", "", 'T')
	exec("SELECT 1", "25006", 'E') // the refusing store
	exec("SELECT 1", "25P02", 'E')
	exec("RELEASE b", "25P02", 'E')
	exec("ROLLBACK TO SAVEPOINT a", "", 'T')
	var v string
	if err := conn.QueryRow(t.Context(), "SHOW statement_timeout").Scan(&v); err != nil || v != "0" {
		t.Errorf("statement_timeout after ROLLBACK TO: %q, %v; want 0", v, err)
	}
	exec("RELEASE SAVEPOINT a", "", 'T')
	exec("ROLLBACK TO a", "3B001", 'E')
	exec("ROLLBACK", "", 'I')
	exec("BEGIN", "", 'T')
	exec(`SAVEPOINT "_pg3_1"`, "", 'T')
	exec(`RELEASE "_pg3_1"`, "", 'T')
	exec("COMMIT", "", 'I')
}
