package pgtest

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// Backup takes a logical backup of the database at url, as an operator
// does with pg_dump, and returns the file it wrote under t's temporary
// directory. The server's own pg_dump is used, or the one on PATH beside
// an external server (MS_TEST_PG_URL).
func Backup(t testing.TB, url string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "backup.dump")
	tool(t, "pg_dump", "--format=custom", "--file="+file, "--dbname="+url)
	return file
}

// Restore restores backup, from Backup, into a fresh database, which it
// drops when t ends, and returns its connection string: the database as
// it was when the backup was taken.
func Restore(t testing.TB, backup string) string {
	t.Helper()
	url := NewDB(t)
	tool(t, "pg_restore", "--no-owner", "--exit-on-error", "--dbname="+url, backup)
	return url
}

// tool runs the PostgreSQL client program name with args and fails t with
// its output if it fails.
func tool(t testing.TB, name string, args ...string) {
	t.Helper()
	path := name
	if server.binDir != "" {
		path = filepath.Join(server.binDir, name)
	}
	out, err := exec.CommandContext(t.Context(), path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("pgtest: %s: %v\n%s", name, err, out)
	}
}
