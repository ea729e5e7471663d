package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/meterstore/meterstore/internal/pgcluster"
)

// privatePostgres is a PostgreSQL server of one test's own, which the
// test may stop and start again on the same port.
type privatePostgres struct {
	t       *testing.T
	cluster *pgcluster.Cluster
	bin     string // the directory of pg_ctl
	dataDir string
	opts    string // the server's options, as pg_ctl -o takes them
}

// startPrivatePostgres starts a PostgreSQL server for t alone, stopped
// and removed when t ends.
func startPrivatePostgres(t *testing.T) *privatePostgres {
	t.Helper()
	c, err := pgcluster.Start(t.Context(), pgcluster.Options{Settings: map[string]string{"fsync": "off"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) })
	pp := &privatePostgres{t: t, cluster: c, bin: c.BinDir()}
	conn, err := pgx.Connect(t.Context(), c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if err := conn.QueryRow(t.Context(), `SHOW data_directory`).Scan(&pp.dataDir); err != nil {
		t.Fatal(err)
	}
	// The options the server runs with, for starting it again as it was:
	// the port above all, which the deployment's URL names.
	opts, err := os.ReadFile(filepath.Join(pp.dataDir, "postmaster.opts"))
	if err != nil {
		t.Fatal(err)
	}
	args := regexp.MustCompile(`"([^"]*)"`).FindAllStringSubmatch(string(opts), -1)
	var keep []string
	for i := 0; i < len(args); i++ {
		if args[i][1] == "-D" {
			i++
			continue
		}
		keep = append(keep, args[i][1])
	}
	pp.opts = strings.Join(keep, " ")
	if !strings.Contains(pp.opts, "-p "+strconv.Itoa(c.Port())) {
		t.Fatalf("postmaster.opts %q does not name port %d", opts, c.Port())
	}
	return pp
}

// pgCtl runs pg_ctl with args as the owner of the data directory.
func (pp *privatePostgres) pgCtl(args ...string) {
	pp.t.Helper()
	cmd := exec.CommandContext(pp.t.Context(), filepath.Join(pp.bin, "pg_ctl"), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = pp.dataDir
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			pp.t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	if err := cmd.Run(); err != nil {
		pp.t.Fatalf("pg_ctl %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
}

func (pp *privatePostgres) stop() { pp.pgCtl("stop", "-D", pp.dataDir, "-m", "fast", "-w") }

func (pp *privatePostgres) start() {
	pp.pgCtl("start", "-D", pp.dataDir, "-w", "-t", "60", "-l", filepath.Join(pp.dataDir, "restart.log"), "-o", pp.opts)
}

// testPostgresStopped: with its PostgreSQL stopped, a running serve
// answers an ingest 503 with Retry-After and /readyz 503; once the server
// is back, the same request succeeds within a bounded wait, and every
// acknowledged reading is there exactly once.
func testPostgresStopped(t *testing.T, bin string) {
	pp := startPrivatePostgres(t)
	e := newFaultEnv(t, t.TempDir(), pp.cluster.URL("postgres"))
	mustRun(t, "create", "-c", e.cfgPath)
	p := startServe(t, bin, e.cfgPath)
	c := newAPIClient(p.base, e.tok)
	l := newLedger()
	ctx := t.Context()
	if status, ans, err := c.send(ctx, l, "power", makeDelivery(today(), meterBase(1, 0), 5)); err != nil || status != 200 {
		t.Fatalf("ingest: %d %+v %v", status, ans, err)
	}

	pp.stop()
	// Several attempts: the pool's idle connections each hold the
	// server's last word (57P01, admin shutdown), and later ones find no
	// server at all; every one is worth retrying.
	d := makeDelivery(today(), meterBase(2, 0), 5)
	for range 4 {
		status, hdr, ans, err := c.ingest(ctx, "power", bytes.NewReader(d.body))
		l.record(d, status, ans, err)
		if err != nil || status != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || ans.Code != "unavailable" {
			t.Errorf("ingest with PostgreSQL stopped: %d %v %+v %v", status, hdr, ans, err)
		}
	}
	if resp, err := c.do(ctx, "GET", "/readyz", "", nil); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("readyz with PostgreSQL stopped: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	pp.start()
	// The pool reconnects: the same request succeeds, within a bound.
	deadline := time.Now().Add(time.Minute)
	for {
		status, ans, err := c.send(ctx, l, "power", d)
		if err == nil && status == http.StatusOK {
			if ans.Inserted != len(d.keys) {
				t.Errorf("the delivery sent again: %+v", ans)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ingest after PostgreSQL came back: %d %+v %v\n%s", status, ans, err, p.stderr.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Ready again, within a bound: an idle connection of the pool that
	// still holds the old server's last word may fail one probe.
	for deadline := time.Now().Add(time.Minute); ; {
		resp, err := c.do(ctx, "GET", "/readyz", "", nil)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("readyz with PostgreSQL back: %v %v\n%s", resp, err, p.stderr.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
	checkStored(t, c, l, "power")
	if code := p.terminate(time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr.String())
	}
}
