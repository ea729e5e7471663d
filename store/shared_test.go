package store

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/pgcluster"
)

// TestOpenConfigShared opens a deployment whose private server another
// user (here a Start in this process, as a running serve would be) holds:
// OpenConfig joins that server at once instead of waiting for it, and
// closing the store leaves the server running for its other user.
func TestOpenConfigShared(t *testing.T) {
	ctx := t.Context()
	dir, err := os.MkdirTemp("", "store-shared-") // the postgres OS user can enter it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	held, err := pgcluster.Start(ctx, pgcluster.Options{Dir: filepath.Join(dir, "pg")})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Stop(ctx)
	cfg, err := config.Parse([]byte(fmt.Sprintf("[postgres]\ndata_dir = %q\n[warehouse]\nurl = %q\n",
		dir, "file://"+filepath.Join(dir, "wh"))), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenConfig(ctx, cfg, nil)
	if err != nil {
		t.Fatalf("OpenConfig beside another user of the private server: %v", err)
	}
	s.Close()
	conn, err := pgx.Connect(ctx, held.URL("postgres"))
	if err != nil {
		t.Fatalf("the other user's server after Close: %v", err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = 'meterstore'").Scan(&n); err != nil || n != 1 {
		t.Errorf("the schema the store made on the shared server: %d, %v", n, err)
	}
}
