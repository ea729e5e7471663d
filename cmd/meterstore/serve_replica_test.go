package main

import (
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// archiveLeaseKey is the advisory lock of table's archive lease, as
// internal/archive/lease.go takes it: the test holds it to keep both
// replicas from archiving until both serve.
func archiveLeaseKey(schema, table string) (int32, int32) {
	f := fnv.New32a()
	f.Write([]byte("meterstore.archive\x00" + schema + "\x00" + table))
	return int32(f.Sum32()), math.MinInt32 + 1
}

// testReplicas: two serve processes on one database and one warehouse,
// their maintenance every 2 seconds. While the test holds power's archive
// lease, both ingest and answer and neither archives. Released, one takes
// the lease and archives; killed mid-window, the other finishes the
// windows. Every acknowledged reading is there exactly once, through
// either replica, and meterstore verify passes.
func testReplicas(t *testing.T, bin string) {
	e, l, w := archivalEnv(t, "", `interval = "15m"`, `interval = "2s"`)
	conn, err := pgx.Connect(t.Context(), e.pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	k1, k2 := archiveLeaseKey("meterstore", "power")
	var held bool
	if err := conn.QueryRow(t.Context(), `SELECT pg_try_advisory_lock($1, $2)`, k1, k2).Scan(&held); err != nil || !held {
		t.Fatalf("taking the archive lease: %v %v", held, err)
	}

	// The second replica has a directory of its own for its query cache,
	// and the same database and warehouse.
	text, err := os.ReadFile(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	dir2 := filepath.Join(e.dir, "replica2")
	if err := os.Mkdir(dir2, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg2 := filepath.Join(dir2, "meterstore.toml")
	text2 := strings.Replace(string(text), fmt.Sprintf("data_dir = %q", e.dir), fmt.Sprintf("data_dir = %q", dir2), 1)
	if text2 == string(text) {
		t.Fatal("no data_dir in the configuration")
	}
	if err := os.WriteFile(cfg2, []byte(text2), 0o644); err != nil {
		t.Fatal(err)
	}
	replicas := []*serveProc{startServe(t, bin, e.cfgPath, "-v"), startServe(t, bin, cfg2, "-v")}
	clients := []*apiClient{newAPIClient(replicas[0].base, e.tok), newAPIClient(replicas[1].base, e.tok)}

	// Both ingest, each its own deliveries and one delivery both.
	ctx := t.Context()
	shared := makeDelivery(today(), meterBase(9, 50), 20)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			for _, d := range []delivery{makeDelivery(today(), meterBase(i+1, 50), 30), shared} {
				if status, ans, err := c.send(ctx, l, "power", d); err != nil || status != http.StatusOK {
					t.Errorf("replica %d: ingest: %d %+v %v", i, status, ans, err)
				}
			}
		})
	}
	wg.Wait()
	for i, c := range clients {
		// Each answers with what both wrote.
		checkStored(t, c, l, "power")
		if strings.Contains(replicas[i].stderr.String(), archived) {
			t.Fatalf("replica %d archived while the test holds the lease\n%s", i, replicas[i].stderr.String())
		}
	}

	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1, $2)`, k1, k2); err != nil {
		t.Fatal(err)
	}
	// Whichever archives first is killed mid-window.
	var first int
	deadline := time.Now().Add(2 * time.Minute)
	for first = -1; first < 0; {
		for i, r := range replicas {
			if strings.Contains(r.stderr.String(), archived) {
				first = i
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replica archived within 2 minutes of the lease's release\n%s\n%s",
				replicas[0].stderr.String(), replicas[1].stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	other := 1 - first
	signalMidWindow(t, replicas[first], killSignal)
	t.Logf("replica %d archived %d windows before kill -9", first, strings.Count(replicas[first].stderr.String(), archived))

	waitWatermark(t, clients[other], "power", w, 2*time.Minute)
	log := replicas[other].stderr.String()
	t.Logf("replica %d archived %d windows after, %d resumed", other, strings.Count(log, archived), strings.Count(log, "recovered=true"))
	if !strings.Contains(log, archived) {
		t.Errorf("replica %d archived nothing after the kill of replica %d\n%s", other, first, log)
	}
	checkStored(t, clients[other], l, "power")
	if code := replicas[other].terminate(time.Minute); code != 0 {
		t.Fatalf("exit %d\n%s", code, replicas[other].stderr.String())
	}
	mustRun(t, "verify", "-c", e.cfgPath)
}
