package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/pgcluster"
)

// TestOpenConfigBusy opens a deployment whose private server another
// process holds: OpenConfig gives up after the bounded wait with an error
// that is retryable, so that the command line exits 75.
func TestOpenConfigBusy(t *testing.T) {
	ctx := t.Context()
	dir, err := os.MkdirTemp("", "store-busy-") // the postgres OS user can enter it
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
	begin := time.Now()
	s, err := OpenConfig(ctx, cfg, nil)
	if err == nil {
		s.Close()
		t.Fatal("opened a deployment whose private server another process holds")
	}
	if took := time.Since(begin); took > pgcluster.DefaultLockWait+10*time.Second {
		t.Errorf("OpenConfig gave up after %v", took)
	}
	if !errors.Is(err, pgcluster.ErrBusy) || !IsRetryable(err) {
		t.Errorf("OpenConfig of a busy deployment: %v (retryable: %v)", err, IsRetryable(err))
	}
}
