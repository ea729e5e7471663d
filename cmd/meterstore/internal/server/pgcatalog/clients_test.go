package pgcatalog

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/internal/pgtest"
)

// A captured statement is one a client sent to a PostgreSQL holding the
// shapes, as its log (log_statement = all) recorded it: see
// testdata/clients.json and cmd/meterstore/testdata/pgclients.
type captured struct {
	Client string    `json:"client"`
	SQL    string    `json:"sql"`
	Params []*string `json:"params"`
}

func loadCaptured(t *testing.T) []captured {
	t.Helper()
	b, err := os.ReadFile("testdata/clients.json")
	if err != nil {
		t.Fatal(err)
	}
	var cs []captured
	if err := json.Unmarshal(b, &cs); err != nil {
		t.Fatal(err)
	}
	if len(cs) < 30 {
		t.Fatalf("%d captured statements, want the four clients'", len(cs))
	}
	return cs
}

// capturedOID is the oid of power.readings in the capture, which psql's
// \d and pgjdbc's ResultSetMetaData send back as literals.
const capturedOID = "16387"

// wantHandled says which captured statements are catalog statements: the
// SELECTs that do not read power.readings. The others are the data
// statements (store.Prepare's) and the transaction, SHOW and SET
// statements (the protocol server's).
func wantHandled(sql string) bool {
	low := strings.ToLower(strings.TrimSpace(sql))
	return strings.HasPrefix(low, "select") && !strings.Contains(low, "power.readings")
}

// reference creates, in a fresh database, the relations of the shapes
// of c's store by hand, as a real PostgreSQL table of each shape: the
// answer a client would get from PostgreSQL itself.
func reference(t *testing.T, c *Catalog) (*pgxpool.Pool, string) {
	t.Helper()
	url := pgtest.NewDB(t)
	pool, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ddl := []string{"DROP SCHEMA public CASCADE"}
	rows, err := c.pool.Query(t.Context(), `
SELECT n.nspname, c.relname, string_agg(quote_ident(a.attname) || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
WHERE c.relkind = 'r' AND n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'
GROUP BY 1, 2 ORDER BY 1, 2`)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]bool{}
	for rows.Next() {
		var ns, rel, cols string
		if err := rows.Scan(&ns, &rel, &cols); err != nil {
			t.Fatal(err)
		}
		if !schemas[ns] {
			schemas[ns] = true
			ddl = append(ddl, "CREATE SCHEMA "+ident(ns))
		}
		ddl = append(ddl, fmt.Sprintf("CREATE TABLE %s.%s (%s)", ident(ns), ident(rel), cols))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, s := range ddl {
		if _, err := pool.Exec(t.Context(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	var name string
	if err := pool.QueryRow(t.Context(), "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	return pool, name
}

// TestClientStatements runs every catalog statement that psql, psycopg,
// SQLAlchemy and pgjdbc were found to send through the Catalog, for a
// store of two tables, and checks that each answers as the same
// statement on real PostgreSQL tables of the same shapes does; the data,
// transaction and SHOW statements are not the Catalog's.
func TestClientStatements(t *testing.T) {
	s := openStore(t, pgtest.NewDB(t), "power", "gas")
	c := openCatalog(t, s, Options{})
	ref, refName := reference(t, c)
	oidOf := func(run func(string) ([][]string, error)) string {
		rows, err := run("SELECT 'power.readings'::pg_catalog.regclass::pg_catalog.oid")
		if err != nil || len(rows) != 1 {
			t.Fatalf("oid of power.readings: %v %v", rows, err)
		}
		return "'" + rows[0][0] + "'"
	}
	ours := oidOf(func(q string) ([][]string, error) { _, r, _, err := collect(t, c, q); return r, err })
	theirs := oidOf(func(q string) ([][]string, error) { _, r, err := direct(t, ref, q); return r, err })
	oidLike := regexp.MustCompile(`^\d{4,}$`)
	// normal renders rows for comparison, in sorted order when the
	// statement has no ORDER BY (the order of the relations in the heap).
	normal := func(rows [][]string, db, oid string, ordered bool) string {
		var lines []string
		for _, r := range rows {
			for i, v := range r {
				v = strings.ReplaceAll(v, db, "DB")
				v = strings.ReplaceAll(v, strings.Trim(oid, "'"), "OID")
				if oidLike.MatchString(v) {
					v = "N" // other oids of relations made in each database
				}
				r[i] = v
			}
			lines = append(lines, strings.Join(r, "|"))
		}
		if !ordered {
			slices.Sort(lines)
		}
		return strings.Join(lines, "\n")
	}
	handled := 0
	for i, cs := range loadCaptured(t) {
		t.Run(fmt.Sprintf("%02d_%s", i, cs.Client), func(t *testing.T) {
			if got, want := c.Handles(cs.SQL), wantHandled(cs.SQL); got != want {
				t.Fatalf("Handles = %v, want %v:\n%s", got, want, cs.SQL)
			}
			if !wantHandled(cs.SQL) {
				return
			}
			handled++
			var params []string
			for _, p := range cs.Params {
				if p == nil {
					t.Fatal("a NULL parameter in the capture")
				}
				params = append(params, *p)
			}
			cols, rows, tag, err := collect(t, c, strings.ReplaceAll(cs.SQL, capturedOID, strings.Trim(ours, "'")), params...)
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, cs.SQL)
			}
			rcols, rrows, err := direct(t, ref, strings.ReplaceAll(cs.SQL, capturedOID, strings.Trim(theirs, "'")), params...)
			if err != nil {
				t.Fatalf("on PostgreSQL: %v", err)
			}
			if !slices.Equal(cols, rcols) {
				t.Errorf("columns %q, PostgreSQL's %q", cols, rcols)
			}
			if !strings.HasPrefix(tag, "SELECT ") || tag != fmt.Sprintf("SELECT %d", len(rows)) {
				t.Errorf("tag %q for %d rows", tag, len(rows))
			}
			if strings.Contains(strings.ToLower(cs.SQL), "version()") {
				if len(rows) != 1 || !strings.Contains(rows[0][0], "(MeterStore ") {
					t.Errorf("version() = %q", rows)
				}
				return
			}
			ordered := strings.Contains(strings.ToLower(cs.SQL), "order by")
			got, want := normal(rows, c.Database(), ours, ordered), normal(rrows, refName, theirs, ordered)
			if got != want {
				t.Errorf("answer:\n%s\nPostgreSQL's:\n%s", got, want)
			}
			t.Logf("%d rows", len(rows))
		})
	}
	if handled < 20 {
		t.Errorf("%d catalog statements run, want every client's", handled)
	}
}
