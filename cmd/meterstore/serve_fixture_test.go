package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// archivedFixture is a deployment whose serve mounts the catalog, with a
// table the foreign-engine tests read: meters' quarter hours of days
// days from 2026-03-01, a superseded version, two archival
// cycles and late corrections below W (unmarked, one winning and one
// losing), so that a resolution, the readings view and time travel can
// each fail.
type archivedFixture struct {
	d   *catalogDeployment
	c   []string // -c and the configuration's path
	ids []int64  // the table's snapshots, oldest first
	w   string   // the watermark of the current snapshot
	// early is the snapshot of the first archival, earlyW its watermark.
	early  int64
	earlyW string
	wh     string // the warehouse directory
}

// newArchivedFixture builds the fixture with meters market locations
// (the corrections are of the first two) and days days (at least 3). With catalogName, serve's views
// name it as their default catalog (server.catalog_name).
func newArchivedFixture(t *testing.T, meters, days int, catalogName string) *archivedFixture {
	t.Helper()
	d := newCatalogDeployment(t)
	c := []string{"-c", d.cfgPath}
	text, err := os.ReadFile(d.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	// One maintenance cycle in serve's life: the one it starts with, which
	// compacts nothing: it would merge settled March's files while a foreign
	// engine compares snapshots (TestMaintenanceInterop reads compacted files).
	cfg := strings.Replace(string(text), `interval = "15m"`, `interval = "24h"`, 1)
	cfg = strings.Replace(cfg, "\ncompact = true\n", "\ncompact = false\n", 1)
	if !strings.Contains(cfg, `interval = "24h"`) || !strings.Contains(cfg, "\ncompact = false\n") {
		t.Fatal(`the configuration has no line interval = "15m" or compact = true`)
	}
	if catalogName != "" {
		if !strings.Contains(cfg, "\ncatalog_name = \"\"\n") {
			t.Fatal(`the configuration has no line catalog_name = ""`)
		}
		cfg = strings.Replace(cfg, "\ncatalog_name = \"\"\n", fmt.Sprintf("\ncatalog_name = %q\n", catalogName), 1)
	}
	if err := os.WriteFile(d.cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"days.csv": daysCSV(meters, days), "correction.csv": correctionCSV()} {
		p := filepath.Join(d.dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		mustRun(t, append([]string{"ingest", "--table", "power", p}, c...)...)
	}
	// Two archival cycles (the settlement lag is 45 days): March 1 first,
	// then the rest, so that there is an earlier snapshot to travel to.
	if out := mustRun(t, append([]string{"archive", "--now", "2026-04-16T00:00:00Z"}, c...)...); !strings.Contains(out, "power: archived") {
		t.Fatalf("archive: %s", out)
	}
	earlyIDs, earlyW := snapshotList(t, d.cfgPath)
	if out := mustRun(t, append([]string{"archive", "--now", "2026-05-01T00:00:00Z"}, c...)...); !strings.Contains(out, "power: archived") {
		t.Fatalf("archive: %s", out)
	}
	mid, _ := snapshotList(t, d.cfgPath)
	if len(mid) <= len(earlyIDs) {
		t.Fatalf("the second archival made no snapshot: %v, then %v", earlyIDs, mid)
	}
	// Late corrections below W: unmarked rows the readings view resolves.
	late := filepath.Join(d.dir, "late.csv")
	if err := os.WriteFile(late, []byte(lateCSV()), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, append([]string{"ingest", "--table", "power", late}, c...)...)
	// serve's maintenance cycle archives at the wall clock as it starts,
	// which would commit a snapshot while a foreign engine compares them: archive at
	// the wall clock now until a cycle commits none (a cycle archives a
	// bounded number of days: more than 3 days take several).
	mustRun(t, append([]string{"archive"}, c...)...)
	ids, w := snapshotList(t, d.cfgPath)
	for cycle := 0; ; cycle++ {
		mustRun(t, append([]string{"archive"}, c...)...)
		again, againW := snapshotList(t, d.cfgPath)
		if slices.Equal(again, ids) {
			break
		}
		if days <= catalogDays || cycle == days {
			t.Fatalf("an archival cycle with nothing due committed a snapshot: %v, then %v", ids, again)
		}
		ids, w = again, againW
	}
	return &archivedFixture{d: d, c: c, ids: ids, w: w, early: earlyIDs[len(earlyIDs)-1], earlyW: earlyW,
		wh: filepath.Join(d.dir, "wh")}

}

// checkRefusedWrites fails t unless the refused writes of a foreign
// engine left the table as it was: the snapshots ids, every file of
// before (warehouseFiles of wh) unchanged, and as new files only ones
// isWriteFile accepts, which verify notes, names as a problem past the
// orphan age and no longer after orphans --delete.
func checkRefusedWrites(t *testing.T, c []string, cfgPath, wh string, before []string, ids []int64, isWriteFile func(string) bool) {
	// The refused writes left no snapshot; every file there was is
	// unchanged, and the only new ones are what they wrote before their
	// commits were refused, which nothing references (orphans): a data file,
	// a manifest and a manifest list, and checksums of them (isWriteFile
	// says which names are these). No table metadata file and no hint.
	t.Helper()
	after := warehouseFiles(t, wh)
	var orphans []string
	for _, f := range after {
		if !slices.Contains(before, f) {
			orphans = append(orphans, f)
		}
	}
	for _, f := range before {
		if !slices.Contains(after, f) {
			t.Errorf("warehouse file %s changed or went", f)
		}
	}
	for _, f := range orphans {
		if !isWriteFile(f) {
			t.Errorf("the refused writes left %s, which is no data file, manifest or manifest list", f)
		}
	}
	t.Logf("the refused writes left %d unreferenced files: %v", len(orphans), orphans)
	if after, _ := snapshotList(t, cfgPath); !slices.Equal(after, ids) {
		t.Errorf("snapshots %v, then %v", ids, after)
	}
	// verify names each as a note while it is younger than the safety
	// age, and as a problem (exit 1) past it; after orphans --delete it
	// passes again.
	out := []byte(mustRun(t, append([]string{"verify"}, c...)...))
	for _, f := range orphans {
		if name := filepath.Base(strings.Fields(f)[0]); !strings.Contains(string(out), "note: ") || !strings.Contains(string(out), name) {
			t.Errorf("verify does not note %s:\n%s", name, out)
		}
	}
	time.Sleep(1100 * time.Millisecond)
	vout, code := run(t, append([]string{"verify", "--orphan-age", "1s"}, c...)...)
	for _, f := range orphans {
		if name := filepath.Base(strings.Fields(f)[0]); code != exitPermanent || !strings.Contains(vout, name) {
			t.Errorf("verify --orphan-age 1s: exit %d, %s not named:\n%s", code, name, vout)
		}
	}
	mustRun(t, append([]string{"orphans", "--table", "power", "--delete", "--older-than", "1s"}, c...)...)
	if vout, code := run(t, append([]string{"verify", "--orphan-age", "1s"}, c...)...); code != 0 || len(orphans) > 0 && strings.Contains(vout, filepath.Base(strings.Fields(orphans[0])[0])) {
		t.Errorf("verify after orphans --delete: exit %d\n%s", code, vout)
	}
}

// addToken makes a token of the name and scope, adds its section to the
// deployment's configuration and returns the token.
func (d *catalogDeployment) addToken(t *testing.T, name, scope string) string {
	t.Helper()
	tok, section := parseToken(t, mustRun(t, "token", "--name", name, "--scope", scope))
	f, err := os.OpenFile(d.cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("\n" + section); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return tok
}
