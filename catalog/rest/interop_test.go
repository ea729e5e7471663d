package rest_test

import (
	"encoding/json"
	"fmt"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/catalog/catalogtest"
	"github.com/meterstore/meterstore/catalog/rest"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestInteropPyIceberg has PyIceberg read a table we wrote, through the
// table directory and through our REST catalog. Python with pyiceberg and
// pyarrow must be installed (.ci/run installs them); without them the test
// fails in CI and is skipped elsewhere.
func TestInteropPyIceberg(t *testing.T) {
	if err := exec.Command("python3", "-c", "import pyiceberg, pyarrow").Run(); err != nil {
		const msg = "python3 with pyiceberg and pyarrow is required: pip install pyiceberg pyarrow"
		if os.Getenv("CI") != "" {
			t.Fatal(msg, err)
		}
		t.Skip(msg)
	}
	c := catalogtest.Backends()[1].Open(t)
	tbl := catalogtest.CreateTable(t, c, "power", nil)
	const n = 300
	tbl, err := catalogtest.AppendRows(t, tbl, "first", n, iceberg.Properties{"meterstore.watermark": "2026-01-31T23:00:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = catalogtest.AppendRows(t, tbl, "second", 20, iceberg.Properties{"meterstore.watermark": "2026-02-01T00:00:00Z"}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rest.Handler(c, nil))
	defer srv.Close()

	var writers []string
	var values []float64
	for _, w := range []struct {
		name string
		n    int
	}{{"first", n}, {"second", 20}} {
		for i := range w.n {
			writers = append(writers, fmt.Sprintf("%s-%d", w.name, i))
			values = append(values, float64(i)/4)
		}
	}
	want := map[string]any{
		"table_dir": c.Warehouse().Root + "/metering/power",
		"rest_uri":  srv.URL,
		"fields": [][]any{
			{1, "malo_id", "string", true},
			{2, "from", "timestamptz", true},
			{3, "value", "double", true},
			{4, "writer", "string", true},
		},
		"spec":          [][]any{{2, "month", "from_month"}},
		"summary_key":   "meterstore.watermark",
		"summary_value": "2026-02-01T00:00:00Z",
		"writers":       writers,
		"values":        values,
	}
	spec := filepath.Join(t.TempDir(), "want.json")
	data, _ := json.Marshal(want)
	if err := os.WriteFile(spec, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), "python3", "testdata/interop.py", spec).CombinedOutput()
	t.Logf("pyiceberg:\n%s", out)
	if err != nil {
		t.Fatalf("pyiceberg failed: %v", err)
	}
}

// TestInteropPyIcebergRefusals: PyIceberg's commits that the writable
// handler refuses (a location outside the warehouse or on another store,
// one that climbs out of it, a failed requirement, a purge) reach it as
// refusals (BadRequestError, CommitFailedException, NotImplementedError),
// never as CommitStateUnknownException, which it raises for a 5xx on a
// commit; and the table is unchanged. Skipped without PyIceberg, as
// TestInteropPyIceberg is.
func TestInteropPyIcebergRefusals(t *testing.T) {
	if err := exec.Command("python3", "-c", "import pyiceberg").Run(); err != nil {
		const msg = "python3 with pyiceberg is required: pip install pyiceberg pyarrow"
		if os.Getenv("CI") != "" {
			t.Fatal(msg, err)
		}
		t.Skip(msg)
	}
	c := catalogtest.Backends()[1].Open(t)
	tbl := catalogtest.CreateTable(t, c, "power", nil)
	if _, err := catalogtest.AppendRows(t, tbl, "first", 10, nil); err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"metering", "power"}
	before, err := c.History(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rest.WritableHandler(c, nil))
	defer srv.Close()
	out, err := exec.CommandContext(t.Context(), "python3", "testdata/refusals.py", srv.URL, c.Warehouse().Root).CombinedOutput()
	t.Logf("pyiceberg:\n%s", out)
	if err != nil {
		t.Fatalf("pyiceberg: %v", err)
	}
	if after, err := c.History(t.Context(), ident); err != nil || len(after) != len(before) {
		t.Fatalf("the refused commits reached the log: %d commits before, %d after (%v)", len(before), len(after), err)
	}
}
