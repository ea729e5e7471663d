package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/meterstore/meterstore/internal/hadooptest"
)

// TestVerifyFork: a Hadoop-catalog writer commits into the power table's
// metadata mirror; status and verify exit 1 naming its file, and verify
// --resolve-forks moves it aside, after which both pass.
func TestVerifyFork(t *testing.T) {
	dir, _, c := maintainedDeployment(t)
	const now = maintainedAt

	hints, _ := filepath.Glob(filepath.Join(dir, "wh", "*", "power", "metadata", "version-hint.text"))
	hints = slices.DeleteFunc(hints, inRollup)
	if len(hints) != 1 {
		t.Fatalf("version hints of power: %v", hints)
	}
	hw := &hadooptest.Writer{Dir: filepath.Dir(filepath.Dir(hints[0]))}
	ns := filepath.Base(filepath.Dir(hw.Dir))
	ft, err := hw.LoadTable(t.Context(), table.Identifier{ns, "power"})
	if err != nil {
		t.Fatal(err)
	}
	at, err := ft.Scan().ToArrowTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tr := array.NewTableReader(at, 1)
	if !tr.Next() {
		t.Fatal("power has no archived row")
	}
	one := array.NewTableFromRecords(tr.RecordBatch().Schema(), []arrow.RecordBatch{tr.RecordBatch()})
	tx := ft.NewTransaction()
	if err := tx.AppendTable(t.Context(), one, 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	tr.Release()
	at.Release()
	k, err := hw.Version()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Base(hw.MetadataFile(k))

	out, code := run(t, append([]string{"status", "--now", now}, c...)...)
	if code != exitPermanent || !strings.Contains(out, file) {
		t.Errorf("status with a fork: exit %d, want 1 naming %s\n%s", code, file, out)
	}
	out, code = run(t, append([]string{"verify"}, c...)...)
	t.Logf("verify with a fork:\n%s", out)
	if code != exitPermanent || !strings.Contains(out, file) || !strings.Contains(out, "did not make") {
		t.Errorf("verify with a fork: exit %d, want 1 naming %s\n%s", code, file, out)
	}
	out = mustRun(t, append([]string{"verify", "--resolve-forks"}, c...)...)
	if !strings.Contains(out, "moved") || !strings.Contains(out, file) {
		t.Errorf("verify --resolve-forks does not report the move of %s:\n%s", file, out)
	}
	if kept, _ := filepath.Glob(filepath.Join(hw.Dir, "metadata", "forked", "*"+file)); len(kept) != 1 {
		t.Errorf("the foreign %s was not kept aside: %v", file, kept)
	}
	mustRun(t, append([]string{"status", "--now", now}, c...)...)
}
