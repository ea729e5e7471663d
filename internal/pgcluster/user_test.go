package pgcluster

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestServerUserMade runs, as root, where none of the server's users
// exists (here a name no machine has, in place of postgres and
// meterstore): Start makes a system user without a home or a login
// shell, says so, and the server runs as it.
func TestServerUserMade(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root runs the server as another user")
	}
	name := fmt.Sprintf("mstest%d", os.Getpid()%1_000_000)
	if _, err := user.Lookup(name); err == nil {
		t.Fatalf("user %s exists already: the test would show nothing", name)
	}
	saved := serverUsers
	serverUsers = []string{name}
	t.Cleanup(func() {
		serverUsers = saved
		exec.Command("userdel", name).Run()
		exec.Command("groupdel", name).Run()
	})
	var logs bytes.Buffer
	dir := filepath.Join(reachableDir(t), "pg")
	killServer(t, filepath.Join(dir, "data"))
	c := mustStart(t, Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("Start made no user %s: %v\n%s", name, err, logs.String())
	}
	if !strings.Contains(logs.String(), "made the system user "+name) {
		t.Errorf("Start does not say that it made the user:\n%s", logs.String())
	}
	if u.HomeDir != "/nonexistent" {
		t.Errorf("the user's home: %q", u.HomeDir)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(dir, "data"), &st); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(st.Uid) != u.Uid {
		t.Errorf("the data directory belongs to uid %d, not to %s (%s)", st.Uid, name, u.Uid)
	}
	if err := exec1(t.Context(), c, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
}
