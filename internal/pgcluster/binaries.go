package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// EnvBinDirs names the variable that replaces the search for installed
// server binaries: a list of directories, separated as in PATH, looked in
// in order. Set but empty, no installed binaries are used, and the
// cluster runs on the packaged ones.
const EnvBinDirs = "MS_PG_BIN_DIRS"

// installedBinaries returns the directories holding initdb and pg_ctl,
// the first choice first.
func installedBinaries() []string {
	var cands []string
	if env, ok := os.LookupEnv(EnvBinDirs); ok {
		cands = filepath.SplitList(env)
	} else {
		if p, err := exec.LookPath("pg_ctl"); err == nil {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				p = real
			}
			cands = append(cands, filepath.Dir(p))
		}
		dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
		slices.SortFunc(dirs, func(a, b string) int { return majorOf(b) - majorOf(a) })
		cands = append(cands, dirs...)
	}
	var found []string
	for _, d := range cands {
		if d == "" || slices.Contains(found, d) {
			continue
		}
		if isFile(filepath.Join(d, "pg_ctl")) && isFile(filepath.Join(d, "initdb")) {
			found = append(found, d)
		}
	}
	return found
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// versionOf returns the version of the server binaries in dir, such as
// "PostgreSQL 17.11", and its major version.
func versionOf(ctx context.Context, dir string) (string, int, error) {
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "postgres"), "--version").Output()
	if err != nil {
		return "", 0, fmt.Errorf("pgcluster: %s --version: %w", filepath.Join(dir, "postgres"), err)
	}
	// "postgres (PostgreSQL) 17.11" or "... 15.18 (Debian 15.18-0+deb12u1)"
	f := strings.Fields(strings.TrimSpace(string(out)))
	if len(f) < 3 {
		return "", 0, fmt.Errorf("pgcluster: %s --version: %q", dir, out)
	}
	v := f[2]
	major, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	if err != nil {
		return "", 0, fmt.Errorf("pgcluster: %s --version: %q", dir, out)
	}
	return "PostgreSQL " + v, major, nil
}

// clusterMajor returns the major version of the existing cluster in dir,
// or 0 if there is none.
func clusterMajor(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "data", "PG_VERSION"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// pickBinaries chooses the server binaries: the installed ones first, the
// packaged ones where none are installed, and, for an existing cluster,
// the first of its major version, which alone can run it.
func (c *Cluster) pickBinaries(ctx context.Context) error {
	want := clusterMajor(c.dir)
	var seen []string
	for _, d := range installedBinaries() {
		v, major, err := versionOf(ctx, d)
		if err != nil {
			c.logger.Warn("skipping PostgreSQL binaries that do not run", "dir", d, "err", err)
			continue
		}
		if want == 0 || major == want {
			c.bin, c.version = d, v
			return nil
		}
		seen = append(seen, v+" in "+d)
	}
	if want != 0 && want != packagedMajor {
		if len(seen) == 0 {
			return fmt.Errorf("pgcluster: the cluster in %s was made by PostgreSQL %d, whose server binaries are not installed: %w",
				c.dir, want, ErrNoBinaries)
		}
		return fmt.Errorf("pgcluster: the cluster in %s was made by PostgreSQL %d; installed are only %s: install PostgreSQL %d's server",
			c.dir, want, strings.Join(seen, ", "), want)
	}
	bin, err := packaged(ctx, c.logger)
	if err != nil {
		if errors.Is(err, ErrNoBinaries) || len(seen) == 0 {
			return err
		}
		return fmt.Errorf("pgcluster: the cluster in %s was made by PostgreSQL %d; installed are only %s: %w",
			c.dir, want, strings.Join(seen, ", "), err)
	}
	c.bin = bin
	if c.version, _, err = versionOf(ctx, bin); err != nil {
		return err
	}
	return nil
}
