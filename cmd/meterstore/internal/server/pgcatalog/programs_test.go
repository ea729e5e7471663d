package pgcatalog

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meterstore/meterstore/internal/pgtest"
)

// pgclients holds the client programs (cmd/meterstore/testdata/pgclients).
var pgclients = filepath.Join("..", "..", "..", "testdata", "pgclients")

// clientMissing fails t in CI, where .ci/run installs every client, and
// skips it elsewhere.
func clientMissing(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// TestClientPrograms points the client programs at the shape database
// itself, as its owner: PostgreSQL's answers to psql, psycopg 3,
// SQLAlchemy with pandas and pgjdbc for the shapes of a store of two
// tables, which serve's wire protocol must give too. A program whose
// client is not installed is skipped, outside CI.
func TestClientPrograms(t *testing.T) {
	s := openStore(t, pgtest.NewDB(t), "power", "gas")
	c := openCatalog(t, s, Options{})
	cc := s.ServiceDB().Pool.Config().ConnConfig
	env := append(os.Environ(), "PGHOST="+cc.Host, fmt.Sprint("PGPORT=", cc.Port), "PGUSER="+cc.User,
		"PGPASSWORD="+cc.Password, "PGDATABASE="+c.Database(), "PGSSLMODE=disable")
	dir, err := filepath.Abs(pgclients)
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, want []string, name string, args ...string) {
		t.Helper()
		if _, err := exec.LookPath(name); err != nil {
			clientMissing(t, name+" is not installed")
		}
		cmd := exec.CommandContext(t.Context(), name, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, args, err, out)
		}
		t.Logf("%s", out)
		for _, w := range want {
			if !strings.Contains(string(out), w) {
				t.Errorf("no %q in the output", w)
			}
		}
	}
	t.Run("psql", func(t *testing.T) {
		run(t, []string{
			" gas    | ", " power  | ", " system | ",
			" power  | completeness      | table |", " power  | readings          | table |", " power  | readings_versions | table |",
			`Table "power.readings"`, " malo_id       | text                     |",
			" from          | timestamp with time zone |", " value         | numeric(18,6)            |",
			" version       | numeric(20,0)            |", " balancing_day | date                     |",
		}, "bash", "psql.sh")
	})
	python := func(t *testing.T, modules string) {
		if err := exec.Command("python3", "-c", "import "+modules).Run(); err != nil {
			clientMissing(t, "python3 with "+modules+" is not installed (.ci/run installs them)")
		}
	}
	t.Run("psycopg", func(t *testing.T) {
		python(t, "psycopg")
		run(t, []string{"columns [('malo_id', 25), ('from', 1184), ('value', 1700)]", "rows 0"}, "python3", "psycopg_client.py")
	})
	t.Run("sqlalchemy", func(t *testing.T) {
		python(t, "psycopg, sqlalchemy, pandas")
		run(t, []string{
			"schemas ['gas', 'information_schema', 'power', 'system']",
			"tables ['completeness', 'readings', 'readings_versions']",
			"column from TIMESTAMP", "column value NUMERIC(18, 6)", "frame ['malo_id', 'from', 'value'] 0",
		}, "python3", "sqlalchemy_client.py")
	})
	t.Run("pgjdbc", func(t *testing.T) {
		jar := os.Getenv("MS_PGJDBC_JAR")
		if jar == "" {
			clientMissing(t, "MS_PGJDBC_JAR is not set (.ci/pgjdbc.sh fetches pgjdbc)")
		}
		run(t, []string{
			"schema gas\n", "schema power\n", "schema system\n",
			"table power.completeness TABLE\n", "table power.readings TABLE\n", "table power.readings_versions TABLE\n",
			"column malo_id text 12 1\n", "column from timestamptz 93 5\n", "column value numeric 2 7\n",
			"result column from timestamptz\n", "rows 0\n",
		}, "java", "-cp", jar, "Jdbc.java")
	})
}
