package blob_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/blob"
)

// The multi-process race re-executes the test binary; these variables tell
// the copy to act as one racing writer (TestHelperProcess).
const (
	helperEnv       = "MS_BLOB_HELPER"
	helperDirEnv    = "MS_BLOB_HELPER_DIR"
	helperIDEnv     = "MS_BLOB_HELPER_ID"
	helperRoundsEnv = "MS_BLOB_HELPER_ROUNDS"
)

// TestLocalMultiProcessRace races 16 processes for each of 200 keys. The
// local driver must pick exactly one winner per key across processes,
// which gocloud.dev's fileblob does not.
func TestLocalMultiProcessRace(t *testing.T) {
	const procs, rounds = 16, 200
	dir := t.TempDir()
	type helper struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout *bufio.Reader
		stderr bytes.Buffer
	}
	helpers := make([]*helper, procs)
	for id := range helpers {
		h := &helper{cmd: exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperProcess$")}
		h.cmd.Env = append(os.Environ(),
			helperEnv+"=1",
			helperDirEnv+"="+dir,
			fmt.Sprintf("%s=%d", helperIDEnv, id),
			fmt.Sprintf("%s=%d", helperRoundsEnv, rounds))
		h.cmd.Stderr = &h.stderr
		var err error
		if h.stdin, err = h.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		stdout, err := h.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		h.stdout = bufio.NewReader(stdout)
		if err := h.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		helpers[id] = h
	}

	// Barrier: every helper has opened the bucket and waits for EOF on its
	// stdin before the first round, so all start together.
	for id, h := range helpers {
		if line, err := h.stdout.ReadString('\n'); line != "ready\n" {
			t.Fatalf("helper %d: %q, %v; stderr:\n%s", id, line, err, h.stderr.String())
		}
	}
	start := time.Now()
	for _, h := range helpers {
		h.stdin.Close()
	}

	winners := slices.Repeat([]int{-1}, rounds)
	for id, h := range helpers {
		out, err := io.ReadAll(h.stdout)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v; stderr:\n%s", id, err, h.stderr.String())
		}
		for line := range strings.Lines(string(out)) {
			r, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(line), "won "))
			if err != nil || r < 0 || r >= rounds {
				t.Fatalf("helper %d printed %q", id, line)
			}
			if winners[r] >= 0 {
				t.Errorf("round %d: helpers %d and %d both won", r, winners[r], id)
			}
			winners[r] = id
		}
	}
	elapsed := time.Since(start)

	b := mustOpen(t, fileURL(dir))
	defer b.Close()
	wins := make([]int, procs)
	for r, id := range winners {
		if id < 0 {
			t.Errorf("round %d: nobody won", r)
			continue
		}
		wins[id]++
		got, err := b.Get(t.Context(), roundKey(r))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, payload(r, id)) {
			t.Errorf("round %d: stored data is not that of winner %d", r, id)
		}
	}
	page, err := b.List(t.Context(), "", blob.ListOptions{})
	if err != nil || len(page.Objects) != rounds || page.Next != "" {
		t.Errorf("List: %d objects, Next %q, %v; want exactly the %d round keys", len(page.Objects), page.Next, err, rounds)
	}
	t.Logf("%d processes x %d rounds in %v; wins per process %v", procs, rounds, elapsed.Round(time.Millisecond), wins)
}

// TestHelperProcess is one writer of TestLocalMultiProcessRace; run
// directly, it does nothing.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	if err := racer(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// racer tries to win every round and prints "won N" for each round N it
// won. After each round it reads the key back: whoever won, the object
// must be whole.
func racer() error {
	id, err1 := strconv.Atoi(os.Getenv(helperIDEnv))
	rounds, err2 := strconv.Atoi(os.Getenv(helperRoundsEnv))
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	ctx := context.Background()
	b, err := blob.Open(ctx, fileURL(os.Getenv(helperDirEnv)))
	if err != nil {
		return err
	}
	defer b.Close()
	fmt.Println("ready")
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		return err
	}
	for r := range rounds {
		err := b.PutIfAbsent(ctx, roundKey(r), payload(r, id))
		switch {
		case err == nil:
			fmt.Printf("won %d\n", r)
		case !errors.Is(err, blob.ErrExists):
			return err
		}
		got, err := b.Get(ctx, roundKey(r))
		if err != nil {
			return err
		}
		if !validPayload(got, r) {
			return fmt.Errorf("round %d: read %d bytes that no writer wrote: %.40q", r, len(got), got)
		}
	}
	return nil
}

func roundKey(r int) string { return fmt.Sprintf("race/round-%04d", r) }

// payload is what writer id puts in round r: a header and a body whose
// length and filling depend on id, so that a torn or mixed object shows.
func payload(r, id int) []byte {
	p := fmt.Appendf(nil, "round %04d writer %02d|", r, id)
	return append(p, bytes.Repeat([]byte{byte('a' + id)}, 1000+331*id)...)
}

func validPayload(p []byte, r int) bool {
	var id int
	if _, err := fmt.Sscanf(string(p), "round %d writer %d|", new(int), &id); err != nil {
		return false
	}
	return id >= 0 && id < 26 && bytes.Equal(p, payload(r, id))
}

// TestLocalCrashLeftovers plants the temporary files a writer leaves when it
// crashes before link(2) and checks that nobody sees them.
func TestLocalCrashLeftovers(t *testing.T) {
	dir := t.TempDir()
	b := mustOpen(t, fileURL(dir))
	defer b.Close()
	ctx := t.Context()
	if err := b.PutIfAbsent(ctx, "a/x", []byte("x")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".tmp-123", "a/.tmp-456", "a/.tmp-x"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("torn"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	page, err := b.List(ctx, "", blob.ListOptions{})
	if err != nil || len(page.Objects) != 1 || page.Objects[0].Key != "a/x" {
		t.Errorf("List = %+v, %v; want only a/x", page.Objects, err)
	}
	if err := b.PutIfAbsent(ctx, "a/y", []byte("y")); err != nil {
		t.Errorf("PutIfAbsent next to leftovers: %v", err)
	}
	if err := b.Delete(ctx, "a/x"); err != nil {
		t.Errorf("Delete next to leftovers: %v", err)
	}
	if got, err := b.Get(ctx, "a/y"); err != nil || string(got) != "y" {
		t.Errorf("Get(a/y) = %q, %v", got, err)
	}
	// A successful put leaves no temporary file behind.
	matches, _ := filepath.Glob(filepath.Join(dir, "a", ".tmp-*"))
	if len(matches) != 2 {
		t.Errorf("temporary files in a/: %q; want only the 2 planted", matches)
	}
}

// TestLocalKeyPrefixConflicts covers what a file system cannot store but
// S3 can: a key and keys below it ("a" and "a/b"). The local driver
// refuses such a put with an error that is not ErrExists.
func TestLocalKeyPrefixConflicts(t *testing.T) {
	b := mustOpen(t, fileURL(t.TempDir()))
	defer b.Close()
	ctx := t.Context()
	for _, key := range []string{"file", "dir/x"} {
		if err := b.PutIfAbsent(ctx, key, []byte(key)); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{"file/below", "dir"} {
		err := b.PutIfAbsent(ctx, key, []byte("x"))
		if err == nil || errors.Is(err, blob.ErrExists) {
			t.Errorf("PutIfAbsent(%q): %v; want a conflict error", key, err)
		}
		if _, err := b.Get(ctx, key); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Get(%q): %v; want ErrNotFound", key, err)
		}
		if err := b.Delete(ctx, key); err != nil {
			t.Errorf("Delete(%q): %v; want success", key, err)
		}
	}
	if got, err := b.Get(ctx, "dir/x"); err != nil || string(got) != "dir/x" {
		t.Errorf("Get(dir/x) = %q, %v; want it untouched", got, err)
	}
}
