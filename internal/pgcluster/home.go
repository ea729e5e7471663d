package pgcluster

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// relocate decides, as root, where the cluster's files live: in c.dir if
// the postgres OS user can enter it, else in a directory of its own under
// relocateRoot, named after c.dir, that c.dir/data links to. An existing
// link always wins, so the data is found again by every later Start even
// if c.dir moves.
func (c *Cluster) relocate() error {
	link := filepath.Join(c.dir, "data")
	fi, err := os.Lstat(link)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(link)
		if err != nil {
			return fmt.Errorf("pgcluster: %w", err)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(c.dir, target)
		}
		c.home = filepath.Dir(target)
		if !c.canEnter(c.home) {
			return c.unreachable(c.home, "where "+link+" points")
		}
		return nil
	}
	if c.canEnter(filepath.Dir(c.dir)) {
		if err := os.Chown(c.dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			return fmt.Errorf("pgcluster: %w", err)
		}
		return nil
	}
	if err == nil {
		// A cluster made when the postgres user could still enter c.dir.
		return c.unreachable(filepath.Dir(c.dir), "where the cluster "+link+" is")
	}

	home := filepath.Join(relocateRoot, homeName(c.dir))
	if _, err := os.Stat(filepath.Join(home, "data", "PG_VERSION")); err == nil {
		// c.dir was removed (its link with it) and made again, as a
		// later demo does. Without the relocation the cluster would have
		// gone with c.dir; bringing it back under a new c.dir would be a
		// surprise, and deleting data is not for Start to do: it is moved
		// aside, and the warning says where.
		aside := home + ".removed-" + time.Now().UTC().Format("20060102T150405.000000000Z")
		if err := os.Rename(home, aside); err != nil {
			return fmt.Errorf("pgcluster: %w", err)
		}
		c.logger.Warn("the PostgreSQL cluster an earlier "+c.dir+" had is no longer linked from it: moved it aside; "+
			"remove it when it is not needed (rm -r "+aside+"), or link it back to use it",
			"dir", c.dir, "moved_to", aside)
	}
	if err := os.MkdirAll(relocateRoot, 0o755); err != nil {
		return fmt.Errorf("pgcluster: the postgres OS user cannot enter %s, and a directory for the cluster it can enter: %w", c.dir, err)
	}
	if err := os.Mkdir(home, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if err := os.Chown(home, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if !c.canEnter(home) {
		return c.unreachable(home, "made for the cluster of "+c.dir)
	}
	note := fmt.Sprintf("The PostgreSQL cluster of %s, linked from %s.\n"+
		"It is kept here because the postgres OS user, which runs the server, cannot enter %s.\n", c.dir, link, c.dir)
	if err := os.WriteFile(filepath.Join(home, "OWNER"), []byte(note), 0o644); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if err := os.Symlink(filepath.Join(home, "data"), link); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	c.home = home
	c.logger.Warn("the postgres OS user cannot enter the data directory: keeping PostgreSQL's files where it can",
		"dir", c.dir, "files", home, "link", link)
	return nil
}

// canEnter reports whether a process of the postgres user, as Start runs
// it, can make dir its working directory: the test is the real thing, so
// that ACLs and mounts count.
func (c *Cluster) canEnter(dir string) bool {
	cmd := exec.Command(filepath.Join(c.bin, "pg_ctl"), "--version")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	return cmd.Run() == nil
}

// unreachable returns the error for a directory dir, described by what,
// that the postgres user cannot enter, saying which directories to open.
func (c *Cluster) unreachable(dir, what string) error {
	closed := c.closedAbove(dir)
	fix := "let it traverse every directory above (chmod o+x), and check that it can run " + c.bin
	if len(closed) > 0 {
		fix = "let it traverse them: chmod o+x " + strings.Join(closed, " ")
	}
	return fmt.Errorf("pgcluster: the postgres OS user, which runs the server when meterstore runs as root, "+
		"cannot enter %s (%s); %s", dir, what, fix)
}

// closedAbove returns dir and the directories above it whose permission
// bits do not let the postgres user (with its primary group only, as Start
// runs it) traverse them, from the top down.
func (c *Cluster) closedAbove(dir string) []string {
	var closed []string
	for p := dir; ; p = filepath.Dir(p) {
		var st syscall.Stat_t
		if syscall.Stat(p, &st) == nil {
			bit := uint32(0o001)
			switch {
			case st.Uid == c.cred.Uid:
				bit = 0o100
			case st.Gid == c.cred.Gid:
				bit = 0o010
			}
			if st.Mode&bit == 0 {
				closed = append([]string{p}, closed...)
			}
		}
		if p == filepath.Dir(p) {
			return closed
		}
	}
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// homeName names the relocated home of dir: readable, and unique by a hash
// of dir's absolute path.
func homeName(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	name := unsafeName.ReplaceAllString(filepath.Base(filepath.Dir(dir))+"-"+filepath.Base(dir), "_")
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	return name + "-" + hex.EncodeToString(sum[:8])
}
