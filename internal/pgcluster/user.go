package pgcluster

import (
	"bytes"
	"fmt"
	"log/slog"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
)

// serverUsers are the unprivileged OS users the server runs as when the
// caller is root, the first that exists: the one the server package
// installs, else the one made for MeterStore, the last, which serverUser
// makes where neither exists (a machine with Go alone, such as a
// container that runs as root).
var serverUsers = []string{"postgres", "meterstore"}

// postgresUser returns the first of serverUsers that exists.
func postgresUser() (*syscall.Credential, error) {
	var err error
	for _, name := range serverUsers {
		var u *user.User
		if u, err = user.Lookup(name); err == nil {
			return credential(u), nil
		}
	}
	return nil, err
}

// serverUser returns the user the server runs as when the caller is root,
// making the last of serverUsers, a system user without a home or a
// login shell, if none exists. PostgreSQL refuses to run as root.
func serverUser(log *slog.Logger) (*syscall.Credential, error) {
	cred, err := postgresUser()
	if err == nil {
		return cred, nil
	}
	name := serverUsers[len(serverUsers)-1]
	made, merr := makeSystemUser(name)
	if merr == nil {
		var u *user.User
		if u, merr = user.Lookup(name); merr == nil {
			if made {
				log.Warn("PostgreSQL refuses to run as root, and no OS user postgres exists: made the system user "+name+
					" (no home, no login shell) to run the private server", "user", name)
			}
			return credential(u), nil
		}
	}
	return nil, fmt.Errorf("pgcluster: PostgreSQL refuses to run as root, and there is no OS user %s to run it as, nor could one be made (%v): "+
		"make one (useradd --system --user-group --no-create-home %s) or run meterstore as another user: %w",
		strings.Join(serverUsers, " or "), merr, name, err)
}

// makeSystemUser makes a system user name with a group of its own, no home
// and no login shell, with useradd (shadow) or adduser (BusyBox); made is
// false when another process made it first.
func makeSystemUser(name string) (made bool, err error) {
	var cmd *exec.Cmd
	if p, err := exec.LookPath("useradd"); err == nil {
		cmd = exec.Command(p, "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
			"--shell", "/usr/sbin/nologin", name)
	} else if p, err := exec.LookPath("adduser"); err == nil {
		cmd = exec.Command(p, "-S", "-D", "-H", "-h", "/nonexistent", "-s", "/sbin/nologin", name)
	} else {
		return false, fmt.Errorf("neither useradd nor adduser is installed")
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if _, lerr := user.Lookup(name); lerr == nil {
			return false, nil
		}
		return false, fmt.Errorf("%s: %w: %s", cmd.Path, err, strings.TrimSpace(out.String()))
	}
	return true, nil
}

func credential(u *user.User) *syscall.Credential {
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}
