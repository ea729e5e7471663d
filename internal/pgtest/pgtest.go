// Package pgtest gives tests a real PostgreSQL server: one private cluster
// per test binary, started by Main, and a fresh database per test.
//
// The private cluster runs on the installed server binaries or, where none
// are installed, on packaged ones (see pgcluster). If MS_TEST_PG_URL is
// set, that server is used instead of a private one.
// There is no skip: a test that needs PostgreSQL fails when none can be had.
package pgtest

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/internal/pgcluster"
)

// EnvURL names the variable that points the tests at an existing server.
const EnvURL = "MS_TEST_PG_URL"

// server is per test binary by nature: TestMain starts it once and every
// test of the binary shares it. It is set only by Main.
var server struct {
	sync.Mutex
	adminURL string
	binDir   string // the private cluster's binaries, "" for an external server
	err      error
	seq      atomic.Int64
}

// settings are the server parameters of the private test cluster: durability
// is traded for speed, and there are connections enough for concurrency tests.
var settings = map[string]string{
	"fsync":                          "off",
	"synchronous_commit":             "off",
	"full_page_writes":               "off",
	"max_connections":                "300",
	"shared_buffers":                 "128MB",
	"max_pred_locks_per_transaction": "256",
}

// Main starts the test cluster (unless MS_TEST_PG_URL is set), runs the
// tests, stops the cluster and exits. Call it from TestMain.
func Main(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	if url := os.Getenv(EnvURL); url != "" {
		server.adminURL = url
		return m.Run()
	}
	c, err := pgcluster.Start(ctx, pgcluster.Options{Settings: settings})
	if err != nil {
		// Tests that need the server report this error and fail.
		server.err = fmt.Errorf("pgtest: start PostgreSQL: %w", err)
		return m.Run()
	}
	defer c.Stop(ctx)
	server.adminURL, server.binDir = c.URL("postgres"), c.BinDir()
	return m.Run()
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9_]+`)

// NewDB creates a fresh database for t, drops it when t ends, and returns
// its connection string.
func NewDB(t testing.TB) string {
	t.Helper()
	url, drop, err := createDB("t", t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return url
}

// ExampleDB creates a fresh database for a runnable example, which has no
// testing.T, and returns its connection string and a function that drops
// it.
func ExampleDB(name string) (url string, drop func(), err error) {
	url, d, err := createDB("x", name)
	if err != nil {
		return "", nil, err
	}
	return url, func() { d() }, nil
}

// createDB creates a database named after label, unique in this process,
// on the test server.
func createDB(prefix, label string) (url string, drop func() error, err error) {
	if server.err != nil {
		return "", nil, server.err
	}
	if server.adminURL == "" {
		return "", nil, fmt.Errorf("pgtest: no server: call pgtest.Main from TestMain")
	}
	name := unsafeChars.ReplaceAllString(strings.ToLower(label), "_")
	name = fmt.Sprintf("%s%d_%d_%s", prefix, os.Getpid(), server.seq.Add(1), name)
	if len(name) > 60 {
		name = name[:60]
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := adminExec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("pgtest: %w", err)
	}
	cfg, err := pgx.ParseConfig(server.adminURL)
	if err != nil {
		return "", nil, fmt.Errorf("pgtest: %w", err)
	}
	drop = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := adminExec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("pgtest: %w", err)
		}
		return nil
	}
	return replaceDB(server.adminURL, cfg.Database, name), drop, nil
}

func adminExec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, server.adminURL)
	if err != nil {
		return fmt.Errorf("connect to test server: %w", err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// replaceDB swaps the database of a URL or keyword/value connection string.
func replaceDB(conn, old, name string) string {
	if strings.Contains(conn, "://") {
		base, query, _ := strings.Cut(conn, "?")
		if i := strings.LastIndex(base, "/"); i > strings.Index(base, "://")+2 {
			base = base[:i]
		}
		out := base + "/" + name
		if query != "" {
			out += "?" + query
		}
		return out
	}
	if old != "" {
		return strings.Replace(conn, "dbname="+old, "dbname="+name, 1)
	}
	return conn + " dbname=" + name
}
