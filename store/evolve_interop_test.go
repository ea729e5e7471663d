package store

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	icetable "github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

// TestEvolveInteropPyIceberg has PyIceberg read a cold table after a
// nullable column was added and another undeclared: it sees both, the
// added one NULL in rows archived before it, and the undeclared one with
// the value archived while it was declared, NULL in rows archived since. Python with
// pyiceberg and pyarrow must be installed; without them the test fails in
// CI and is skipped elsewhere, as catalog's TestInteropPyIceberg.
func TestEvolveInteropPyIceberg(t *testing.T) {
	if err := exec.Command("python3", "-c", "import pyiceberg, pyarrow").Run(); err != nil {
		const msg = "python3 with pyiceberg and pyarrow is required: pip install pyiceberg pyarrow"
		if os.Getenv("CI") != "" {
			t.Fatal(msg, err)
		}
		t.Skip(msg)
	}
	ctx := t.Context()
	e := newEnv(t)
	note := series.Column{Name: "note"}
	s1 := e.open(t, Options{Tables: []Table{withColumns(note)}})
	old := qh(1, 0, 1, "A", 1, 1000)
	old.Extra["note"] = "n"
	mustWrite(t, s1, []Reading{old, qh(1, 0, 2, "A", 1, 1000)})
	if _, err := s1.Archive(ctx, "power", dayN(3)); err != nil {
		t.Fatal(err)
	}
	s2 := e.open(t, Options{Tables: []Table{withColumns(series.Column{Name: "tariff", Values: []string{"HT", "NT"}})}})
	if _, err := s2.Write(ctx, "power", []Reading{withTariff(qh(1, 1, 1, "A", 1, 1000), "NT")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Archive(ctx, "power", dayN(4)); err != nil {
		t.Fatal(err)
	}
	ice, err := e.cat.LoadTable(ctx, icetable.Identifier{"meterstore", "power"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"metadata": ice.MetadataLocation(),
		"has":      []string{"tariff", "note"},
		"lacks":    []string{},
		"column":   "note",
		"values":   []any{"n", nil, nil},
	}
	spec := filepath.Join(t.TempDir(), "want.json")
	data, _ := json.Marshal(want)
	if err := os.WriteFile(spec, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, "python3", "testdata/evolve_interop.py", spec).CombinedOutput()
	t.Logf("pyiceberg:\n%s", out)
	if err != nil {
		t.Fatalf("pyiceberg failed: %v", err)
	}
}
