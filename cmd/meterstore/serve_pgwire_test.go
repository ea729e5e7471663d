package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
)

// pgCrossTier is the cross-tier statement of the PostgreSQL protocol's
// test: per day, the rows, the sum and the late corrections, with a
// timestamptz, a bigint and a decimal column.
const pgCrossTier = `SELECT strftime("from", '%Y-%m-%d') AS day, min("from") AS first, count(*) AS n,
  sum(value) AS total, count(*) FILTER (WHERE version = 20260303000000) AS corrected
FROM power.readings GROUP BY ALL ORDER BY day`

// pgDeployment is a serve with server.pg_listen on loopback over a day
// of power archived and corrected late below W and a day hot.
type pgDeployment struct {
	p        *serveProc
	base     string // http://...
	pgAddr   string
	tok      string // scope query, every table
	gasTok   string // scope query, gas alone
	adminTok string
	dir      string
	cold     time.Time // the archived day
}

// startPgDeployment makes and serves the deployment.
func startPgDeployment(t *testing.T) *pgDeployment {
	t.Helper()
	d := &pgDeployment{dir: t.TempDir()}
	bin := buildBinary(t, d.dir)
	cfgPath, _ := deploymentConfig(t, d.dir)
	tok, section := parseToken(t, mustRun(t, "token", "--name", "reporting", "--scope", "query"))
	gasTok, gasSection := parseToken(t, mustRun(t, "token", "--name", "gasonly", "--scope", "query", "--table", "gas"))
	adminTok, adminSection := parseToken(t, mustRun(t, "token", "--name", "ops", "--scope", "admin"))
	d.tok, d.gasTok, d.adminTok = tok, gasTok, adminTok
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.pgAddr = ln.Addr().String()
	ln.Close()
	cfg := withServerKeys(t, string(text), map[string]string{"listen": `"127.0.0.1:0"`})
	if !strings.Contains(cfg, `pg_listen = ""`) {
		t.Fatal("the template has no pg_listen")
	}
	cfg = strings.Replace(cfg, `pg_listen = ""`, `pg_listen = "`+d.pgAddr+`"`, 1) + "\n" + section + "\n" + gasSection + "\n" + adminSection
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c := []string{"-c", cfgPath}
	mustRun(t, append([]string{"create"}, c...)...)
	today := time.Now().UTC().Truncate(24 * time.Hour)
	d.cold = today.AddDate(0, 0, -60)
	dayCSV := func(day time.Time, name string, lines int, version string) string {
		csv := strings.ReplaceAll(deliveryCSV(2, -1), "2026-03-02T", day.AddDate(0, 0, 1).Format("2006-01-02T"))
		csv = strings.ReplaceAll(csv, "2026-03-01T", day.Format("2006-01-02T"))
		if lines > 0 {
			csv = strings.Join(strings.SplitAfter(csv, "\n")[:lines+1], "")
		}
		csv = strings.ReplaceAll(csv, ",20260302000000,", ","+version+",")
		path := filepath.Join(d.dir, name)
		if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	mustRun(t, append([]string{"ingest", "--table", "power", dayCSV(d.cold, "cold.csv", 0, "20260302000000")}, c...)...)
	mustRun(t, append([]string{"ingest", "--table", "power", dayCSV(today.AddDate(0, 0, -1), "hot.csv", 0, "20260302000000")}, c...)...)
	mustRun(t, append([]string{"archive"}, c...)...)
	// Ten readings of the archived day under a higher version: late
	// corrections, to the cold tier.
	if out := mustRun(t, append([]string{"ingest", "--table", "power", dayCSV(d.cold, "late.csv", 10, "20260303000000")}, c...)...); !strings.Contains(out, "10 late to the cold tier") {
		t.Fatalf("the late corrections: %s", out)
	}
	d.p = startServe(t, bin, cfgPath)
	d.base = d.p.base
	return d
}

// connect opens a pgx connection as user with password.
func (d *pgDeployment) connect(t *testing.T, user, password string) (*pgx.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	return pgx.Connect(ctx, fmt.Sprintf("postgres://%s:%s@%s/meterstore?sslmode=disable", user, password, d.pgAddr))
}

// httpQuery runs sql through POST /v1/query with params and returns its
// rows as JSON objects, numbers as json.Number.
func (d *pgDeployment) httpQuery(t *testing.T, sql string, params []any, accept string) ([]map[string]any, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"sql": sql, "params": params})
	req, _ := http.NewRequestWithContext(t.Context(), "POST", d.base+"/v1/query", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+d.tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("POST /v1/query %s: %d %s", sql, resp.StatusCode, b)
	}
	if accept == "text/csv" {
		return nil, string(b)
	}
	var rows []map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	for dec.More() {
		var r map[string]any
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	return rows, string(b)
}

// pgQuery runs sql with args over conn and returns its rows as objects.
func pgQuery(t *testing.T, conn *pgx.Conn, sql string, args ...any) []map[string]any {
	t.Helper()
	rows, err := conn.Query(t.Context(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var out []map[string]any
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		r := map[string]any{}
		for i, fd := range rows.FieldDescriptions() {
			r[fd.Name] = vals[i]
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

// canonical renders the values of rows alike whatever carried them: an
// instant in RFC 3339 UTC, a number as an exact fraction, NULL as nil.
func canonical(rows []map[string]any) []map[string]string {
	out := make([]map[string]string, len(rows))
	for i, r := range rows {
		out[i] = map[string]string{}
		for k, v := range r {
			out[i][k] = canonicalValue(v)
		}
	}
	return out
}

func canonicalValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case pgtype.Numeric:
		r := new(big.Rat).SetInt(x.Int)
		if x.Exp < 0 {
			r.Quo(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-x.Exp)), nil)))
		} else {
			r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(x.Exp)), nil)))
		}
		return "num:" + r.RatString()
	case json.Number:
		return canonicalValue(x.String())
	case int64, int32, int16, float64:
		return canonicalValue(fmt.Sprint(x))
	case string:
		if t, err := time.Parse(time.RFC3339Nano, x); err == nil {
			return t.UTC().Format(time.RFC3339Nano)
		}
		if r, ok := new(big.Rat).SetString(x); ok {
			return "num:" + r.RatString()
		}
		return x
	}
	return fmt.Sprintf("%T:%v", v, v)
}

// pgCode returns the SQLSTATE of err, "" if it is no server error.
func pgCode(err error) (string, string) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code, pe.Message
	}
	return "", ""
}

// TestServePostgres: serve answers the PostgreSQL protocol on
// server.pg_listen, pgx and psql its clients: a cross-tier statement
// with late corrections and one with parameters equal POST /v1/query's
// answers, a portal returns its rows two at a time, COPY TO STDOUT
// equals the CSV answer, and the refusals carry the SQLSTATEs drivers
// classify: a failed login (counted in /metrics) alike whatever was
// wrong, a table the token may not read alike whatever it holds, a
// write, two statements, a cancel.
func TestServePostgres(t *testing.T) {
	d := startPgDeployment(t)
	conn, err := d.connect(t, "reporting", d.tok)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, d.p.stderr.String())
	}
	defer conn.Close(context.Background())

	t.Run("cross-tier", func(t *testing.T) {
		want, _ := d.httpQuery(t, pgCrossTier, nil, "application/x-ndjson")
		got := pgQuery(t, conn, pgCrossTier)
		if len(want) != 2 || !reflect.DeepEqual(canonical(got), canonical(want)) {
			t.Errorf("pgx:\n%v\nPOST /v1/query:\n%v", canonical(got), canonical(want))
		}
		if want[0]["corrected"] != json.Number("10") {
			t.Errorf("the archived day's late corrections: %v, want 10", want[0]["corrected"])
		}
		// The types drivers map: timestamptz, int8, numeric.
		rows, err := conn.Query(t.Context(), pgCrossTier)
		if err != nil {
			t.Fatal(err)
		}
		rows.Close()
		var oids []uint32
		for _, fd := range rows.FieldDescriptions() {
			oids = append(oids, fd.DataTypeOID)
		}
		if want := []uint32{pgtype.TextOID, pgtype.TimestamptzOID, pgtype.Int8OID, pgtype.NumericOID, pgtype.Int8OID}; !reflect.DeepEqual(oids, want) {
			t.Errorf("type OIDs %v, want %v", oids, want)
		}
		var wm, tiers string
		if err := conn.QueryRow(t.Context(), "SHOW meterstore.watermark").Scan(&wm); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(t.Context(), "SHOW meterstore.tiers").Scan(&tiers); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(wm, "power=20") || tiers != "power=cold,hot" {
			t.Errorf("SHOW meterstore.watermark %q, meterstore.tiers %q after a cross-tier statement", wm, tiers)
		}
	})

	// The statement with parameters, its window across 22:00 of the
	// archived day, and POST /v1/query's answer to it.
	const paramQuery = `SELECT malo_id, "from", value, version FROM power.readings
WHERE "from" >= $1 AND "from" < $2 AND malo_id = $3 ORDER BY "from"`
	from, to := d.cold.Add(20*time.Hour), d.cold.Add(26*time.Hour)
	malo := fmt.Sprint(pgQuery(t, conn, `SELECT min(malo_id) AS m FROM power.readings`)[0]["m"])
	paramWant, _ := d.httpQuery(t, paramQuery, []any{from.Format(time.RFC3339), to.Format(time.RFC3339), malo}, "application/x-ndjson")
	if len(paramWant) != 16 {
		t.Fatalf("POST /v1/query with parameters: %d rows, want 16", len(paramWant))
	}
	// runs reads the rows a client program printed, tab-separated, each
	// run's after a line "RUN ...".
	runs := func(t *testing.T, out string) [][]map[string]any {
		var rs [][]map[string]any
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if strings.HasPrefix(l, "RUN ") {
				rs = append(rs, nil)
				continue
			}
			f := strings.Split(l, "\t")
			if len(rs) == 0 || len(f) != 4 {
				t.Fatalf("a line %q of\n%s", l, out)
			}
			rs[len(rs)-1] = append(rs[len(rs)-1], map[string]any{"malo_id": f[0], "from": f[1], "value": f[2], "version": f[3]})
		}
		return rs
	}

	t.Run("parameters", func(t *testing.T) {
		got := pgQuery(t, conn, paramQuery, from, to, malo)
		if !reflect.DeepEqual(canonical(got), canonical(paramWant)) {
			t.Errorf("pgx with parameters (%d rows):\n%v\nPOST /v1/query (%d rows):\n%v", len(got), canonical(got), len(paramWant), canonical(paramWant))
		}
		// Text parameters of no type, as psql's or a driver's strings.
		got = pgQuery(t, conn, paramQuery, pgx.QueryExecModeExec, from.Format(time.RFC3339), to.Format(time.RFC3339), malo)
		if !reflect.DeepEqual(canonical(got), canonical(paramWant)) {
			t.Errorf("pgx with text parameters:\n%v\nwant\n%v", canonical(got), canonical(paramWant))
		}
		// A string compared with a decimal column, as of no type (OID 0)
		// and as text.
		const above = `SELECT count(*) AS n FROM power.readings WHERE value > $1`
		want, _ := d.httpQuery(t, above, []any{"3.5"}, "application/x-ndjson")
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeExec} {
			got := pgQuery(t, conn, above, mode, "3.5")
			if !reflect.DeepEqual(canonical(got), canonical(want)) || want[0]["n"] == json.Number("0") {
				t.Errorf("value > '3.5' (mode %v): %v, want %v", mode, canonical(got), canonical(want))
			}
		}
	})

	t.Run("psycopg", func(t *testing.T) {
		if err := exec.Command("python3", "-c", "import psycopg").Run(); err != nil {
			clientMissing(t, "python3 with psycopg 3 is not installed (.ci/run installs it)")
		}
		host, port, _ := net.SplitHostPort(d.pgAddr)
		out, err := exec.CommandContext(t.Context(), "python3", "testdata/serve_pg_psycopg.py", host, port, "reporting", d.tok,
			from.Format(time.RFC3339), to.Format(time.RFC3339), malo).CombinedOutput()
		if err != nil {
			t.Fatalf("serve_pg_psycopg.py: %v\n%s", err, out)
		}
		rs := runs(t, string(out))
		for i, r := range rs {
			if !reflect.DeepEqual(canonical(r), canonical(paramWant)) {
				t.Errorf("psycopg, run %d:\n%v\nwant\n%v", i, canonical(r), canonical(paramWant))
			}
		}
		if len(rs) != 2 {
			t.Errorf("psycopg ran %d times, want 2:\n%s", len(rs), out)
		}
	})

	t.Run("pgjdbc", func(t *testing.T) {
		jar := os.Getenv("MS_PGJDBC_JAR")
		if jar == "" {
			home, _ := os.UserHomeDir()
			jar = filepath.Join(home, ".m2/repository/org/postgresql/postgresql/42.7.14/postgresql-42.7.14.jar")
		}
		if _, err := os.Stat(jar); err != nil {
			clientMissing(t, "pgjdbc's jar is not there (MS_PGJDBC_JAR, or Maven's repository): "+err.Error())
		}
		if _, err := exec.LookPath("java"); err != nil {
			clientMissing(t, "java is not installed")
		}
		out, err := exec.CommandContext(t.Context(), "java", "-cp", jar, "testdata/ServePgJdbc.java",
			"jdbc:postgresql://"+d.pgAddr+"/meterstore?sslmode=disable", "reporting", d.tok,
			from.Format(time.RFC3339), to.Format(time.RFC3339), malo).CombinedOutput()
		if err != nil {
			t.Fatalf("ServePgJdbc.java: %v\n%s", err, out)
		}
		rs := runs(t, string(out))
		for i, r := range rs {
			if !reflect.DeepEqual(canonical(r), canonical(paramWant)) {
				t.Errorf("pgjdbc, run %d:\n%v\nwant\n%v", i, canonical(r), canonical(paramWant))
			}
		}
		if len(rs) != 3 {
			t.Errorf("pgjdbc ran %d times, want 3:\n%s", len(rs), out)
		}
	})

	t.Run("grafana", func(t *testing.T) {
		// $__timeFilter("from") as Grafana expands it: literal
		// timestamps, which the comparison with "from" casts.
		q := fmt.Sprintf(`SELECT "from" AS time, malo_id AS metric, value FROM power.readings
WHERE "from" BETWEEN '%s' AND '%s' ORDER BY 1, 2`, from.Format(time.RFC3339), to.Format(time.RFC3339))
		want, _ := d.httpQuery(t, q, nil, "application/x-ndjson")
		got := pgQuery(t, conn, q)
		if len(want) != 32 || !reflect.DeepEqual(canonical(got), canonical(want)) {
			t.Errorf("a Grafana time series (%d rows):\n%v\nPOST /v1/query (%d rows):\n%v", len(got), canonical(got), len(want), canonical(want))
		}
	})

	t.Run("portal", func(t *testing.T) {
		const q = `SELECT "from" FROM power.readings ORDER BY "from" LIMIT 5`
		pc := conn.PgConn()
		fe := pc.Frontend()
		fe.Send(&pgproto3.Parse{Name: "five", Query: q})
		fe.Send(&pgproto3.Bind{DestinationPortal: "p", PreparedStatement: "five"})
		fe.Send(&pgproto3.Describe{ObjectType: 'P', Name: "p"})
		fe.Send(&pgproto3.Execute{Portal: "p", MaxRows: 2})
		fe.Send(&pgproto3.Execute{Portal: "p", MaxRows: 2})
		fe.Send(&pgproto3.Execute{Portal: "p", MaxRows: 2})
		fe.Send(&pgproto3.Close{ObjectType: 'S', Name: "five"})
		fe.Send(&pgproto3.Sync{})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		var seq []string
		for len(seq) < 40 {
			msg, err := fe.Receive()
			if err != nil {
				t.Fatal(err)
			}
			name := strings.TrimPrefix(fmt.Sprintf("%T", msg), "*pgproto3.")
			if cc, ok := msg.(*pgproto3.CommandComplete); ok {
				name += " " + string(cc.CommandTag)
			}
			if e, ok := msg.(*pgproto3.ErrorResponse); ok {
				name += " " + e.Code + " " + e.Message
			}
			seq = append(seq, name)
			if _, ok := msg.(*pgproto3.ReadyForQuery); ok {
				break
			}
		}
		want := []string{"ParseComplete", "BindComplete", "RowDescription", "DataRow", "DataRow", "PortalSuspended",
			"DataRow", "DataRow", "PortalSuspended", "DataRow", "CommandComplete SELECT 5", "CloseComplete", "ReadyForQuery"}
		if !reflect.DeepEqual(seq, want) {
			t.Errorf("a portal executed two rows at a time:\n%v\nwant\n%v", seq, want)
		}
	})

	t.Run("copy", func(t *testing.T) {
		const q = `SELECT malo_id, "from", value::VARCHAR AS value, quality FROM power.readings ORDER BY malo_id, "from"`
		var buf bytes.Buffer
		tag, err := conn.PgConn().CopyTo(t.Context(), &buf, "COPY ("+q+") TO STDOUT WITH (FORMAT csv, HEADER)")
		if err != nil {
			t.Fatal(err)
		}
		_, want := d.httpQuery(t, q, nil, "text/csv")
		if got := canonicalCSV(buf.String()); got != canonicalCSV(want) || tag.RowsAffected() != 384 {
			t.Errorf("COPY TO STDOUT (%s):\n%.300s\nPOST /v1/query as CSV:\n%.300s", tag, got, canonicalCSV(want))
		}
	})

	t.Run("refusals", func(t *testing.T) {
		for _, tc := range []struct{ sql, code string }{
			{"DELETE FROM power.readings", "25006"},
			{"SELECT 1; SELECT 2", "42601"},
			{"SELECT * FROM read_csv('/etc/passwd')", "42501"},
			{"SELECT nosuch FROM power.readings", "42703"},
			{"COPY power.readings FROM STDIN", "25006"},
			{"SET TimeZone = 'Europe/Berlin'", "22023"},
			{"SET nosuch = 1", "42704"},
		} {
			_, err := conn.Exec(t.Context(), tc.sql)
			if code, msg := pgCode(err); code != tc.code {
				t.Errorf("%s: %v (%s %s), want SQLSTATE %s", tc.sql, err, code, msg, tc.code)
			}
		}
		// A failed statement fails the transaction block until ROLLBACK.
		if _, err := conn.Exec(t.Context(), "BEGIN READ ONLY"); err != nil {
			t.Fatal(err)
		}
		conn.Exec(t.Context(), "SELECT nosuch FROM power.readings")
		if _, err := conn.Exec(t.Context(), "SELECT 1"); func() string { c, _ := pgCode(err); return c }() != "25P02" {
			t.Errorf("a statement in a failed block: %v, want 25P02", err)
		}
		if pc := conn.PgConn(); pc.TxStatus() != 'E' {
			t.Errorf("transaction status %c, want E", pc.TxStatus())
		}
		if _, err := conn.Exec(t.Context(), "ROLLBACK"); err != nil || conn.PgConn().TxStatus() != 'I' {
			t.Errorf("ROLLBACK: %v, status %c", err, conn.PgConn().TxStatus())
		}
	})

	t.Run("limited token", func(t *testing.T) {
		gas, err := d.connect(t, "gasonly", d.gasTok)
		if err != nil {
			t.Fatal(err)
		}
		defer gas.Close(context.Background())
		var msgs []string
		for _, q := range []string{`SELECT count(*) FROM power.readings`, `SELECT count(*) FROM power.readings WHERE false`} {
			_, err := gas.Exec(t.Context(), q)
			code, msg := pgCode(err)
			if code != "42501" {
				t.Errorf("%s with a token for gas: %v, want 42501", q, err)
			}
			msgs = append(msgs, msg)
		}
		if msgs[0] != msgs[1] {
			t.Errorf("the refusals differ with the data: %q, %q", msgs[0], msgs[1])
		}
	})

	t.Run("login", func(t *testing.T) {
		before := authFailures(t, d)
		var msgs []string
		for _, c := range [][2]string{{"reporting", "wrong"}, {"nosuch", d.tok}, {"gasonly", d.tok}} {
			_, err := d.connect(t, c[0], c[1])
			code, msg := pgCode(err)
			if code != "28P01" {
				t.Fatalf("login as %s: %v, want 28P01", c[0], err)
			}
			msgs = append(msgs, strings.Replace(msg, c[0], "USER", 1))
		}
		if msgs[0] != msgs[1] || msgs[1] != msgs[2] {
			t.Errorf("the failed logins are told apart: %q", msgs)
		}
		if after := authFailures(t, d); after != before+3 {
			t.Errorf("meterstore_http_auth_failures_total %v, then %v after 3 failed logins", before, after)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		c2, err := d.connect(t, "reporting", d.tok)
		if err != nil {
			t.Fatal(err)
		}
		defer c2.Close(context.Background())
		go func() {
			time.Sleep(time.Second)
			c2.PgConn().CancelRequest(context.Background())
		}()
		start := time.Now()
		_, err = c2.Exec(t.Context(), `SELECT count(*) FROM range(1000000000) a, range(1000000) b WHERE a.range + b.range = -1`)
		if code, _ := pgCode(err); code != "57014" {
			t.Errorf("a canceled statement: %v, want 57014", err)
		}
		t.Logf("canceled after %v", time.Since(start))
		var one int
		if err := c2.QueryRow(t.Context(), "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Errorf("the session after a cancel: %v", err)
		}
		// The session's statement_timeout ends it too.
		if _, err := c2.Exec(t.Context(), "SET statement_timeout = '500ms'"); err != nil {
			t.Fatal(err)
		}
		_, err = c2.Exec(t.Context(), `SELECT count(*) FROM range(1000000000) a, range(1000000) b WHERE a.range + b.range = -1`)
		if code, msg := pgCode(err); code != "57014" || !strings.Contains(msg, "statement timeout") {
			t.Errorf("a statement past statement_timeout: %v, want 57014", err)
		}
	})

	t.Run("psql", func(t *testing.T) {
		if _, err := exec.LookPath("psql"); err != nil {
			clientMissing(t, "psql is not installed")
		}
		host, port, _ := net.SplitHostPort(d.pgAddr)
		psql := func(args ...string) string {
			cmd := exec.CommandContext(t.Context(), "psql", append([]string{"-X", "-h", host, "-p", port, "-U", "reporting", "-d", "meterstore"}, args...)...)
			cmd.Env = append(os.Environ(), "PGPASSWORD="+d.tok, "PGSSLMODE=disable")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("psql %v: %v\n%s", args, err, out)
			}
			return string(out)
		}
		const q = `SELECT strftime("from", '%Y-%m-%d') AS day, count(*) AS n, sum(value)::VARCHAR AS total FROM power.readings GROUP BY ALL ORDER BY day`
		_, want := d.httpQuery(t, q, nil, "text/csv")
		if got := psql("--csv", "-c", q); got != want {
			t.Errorf("psql --csv:\n%s\nPOST /v1/query:\n%s", got, want)
		}
		if got := psql("-c", `\copy (`+q+`) to stdout with csv header`); got != want {
			t.Errorf("psql \\copy:\n%s\nPOST /v1/query:\n%s", got, want)
		}
	})

	// The catalog: the client programs of testdata/pgclients list the
	// tables and columns as PostgreSQL lists tables of their shapes, and
	// read a series across the tiers as POST /v1/query does.
	t.Run("catalog", func(t *testing.T) {
		host, port, _ := net.SplitHostPort(d.pgAddr)
		env := append(os.Environ(), "PGHOST="+host, "PGPORT="+port, "PGUSER=reporting", "PGPASSWORD="+d.tok,
			"PGDATABASE=meterstore", "PGSSLMODE=disable", "MS_PG_FROM="+d.cold.Format(time.RFC3339), "MS_PG_MALO="+malo)
		rows, _ := d.httpQuery(t, `SELECT malo_id, "from", value FROM power.readings WHERE "from" >= $1 AND malo_id = $2 ORDER BY "from"`,
			[]any{d.cold.Format(time.RFC3339), malo}, "application/x-ndjson")
		if len(rows) < 2*96 {
			t.Fatalf("POST /v1/query: %d rows of the series, want both days'", len(rows))
		}
		run := func(t *testing.T, want []string, name string, args ...string) {
			t.Helper()
			cmd := exec.CommandContext(t.Context(), name, args...)
			cmd.Dir, cmd.Env = filepath.Join("testdata", "pgclients"), env
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s %s: %v\n%s", name, args, err, out)
			}
			for _, w := range want {
				if !strings.Contains(string(out), w) {
					t.Errorf("%s: no %q in\n%s", name, w, out)
				}
			}
		}
		t.Run("psql", func(t *testing.T) {
			if _, err := exec.LookPath("psql"); err != nil {
				clientMissing(t, "psql is not installed")
			}
			run(t, []string{" gas    | ", " power  | ", " power  | readings          | table |",
				`Table "power.readings"`, " from          | timestamp with time zone |", " value         | numeric(18,6)            |"},
				"bash", "psql.sh")
		})
		t.Run("sqlalchemy", func(t *testing.T) {
			if err := exec.Command("python3", "-c", "import psycopg, sqlalchemy, pandas").Run(); err != nil {
				clientMissing(t, "python3 with psycopg, sqlalchemy and pandas is not installed (.ci/run installs them)")
			}
			run(t, []string{"schemas ['gas', 'information_schema', 'power', 'system']",
				"tables ['completeness', 'readings', 'readings_versions']", "column value NUMERIC(18, 6)",
				fmt.Sprintf("frame ['malo_id', 'from', 'value'] %d\n", len(rows))}, "python3", "sqlalchemy_client.py")
		})
		t.Run("pgjdbc", func(t *testing.T) {
			jar := os.Getenv("MS_PGJDBC_JAR")
			if jar == "" {
				clientMissing(t, "MS_PGJDBC_JAR is not set (.ci/pgjdbc.sh fetches pgjdbc)")
			}
			run(t, []string{"schema power\n", "table power.readings TABLE\n", "column from timestamptz 93 5\n",
				"result column from timestamptz\n", fmt.Sprintf("rows %d\n", len(rows))}, "java", "-cp", jar, "Jdbc.java")
		})
	})

	// SIGTERM with a session idle: it is ended, serve exits 0 at once.
	if code := d.p.terminate(time.Minute); code != 0 {
		t.Errorf("serve exited %d after SIGTERM with an idle session\n%s", code, d.p.stderr.String())
	}
	if _, err := conn.Exec(context.Background(), "SELECT 1"); err == nil {
		t.Error("the idle session answers after serve's shutdown")
	}
	if log := d.p.stderr.String(); strings.Contains(log, d.tok) || !strings.Contains(log, `msg="serving postgres"`) ||
		!strings.Contains(log, "postgres login refused") {
		t.Errorf("serve's log holds the token, or no postgres service or refused login:\n%s", log)
	}
}

// clientMissing fails t in CI, where .ci/run installs every client, and
// skips it elsewhere.
func clientMissing(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// canonicalCSV renders each field of a CSV text as canonicalValue does.
func canonicalCSV(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		for i, f := range strings.Split(l, ",") {
			if i > 0 {
				b.WriteByte(',')
			}
			f = strings.Replace(f, " ", "T", 1)
			if strings.HasSuffix(f, "+00") {
				f = strings.TrimSuffix(f, "+00") + "Z"
			}
			b.WriteString(canonicalValue(f))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// authFailures returns the sum of meterstore_http_auth_failures_total of
// the PostgreSQL protocol.
func authFailures(t *testing.T, d *pgDeployment) float64 {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", d.base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+d.adminTok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var sum float64
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "meterstore_http_auth_failures_total{") && strings.Contains(l, `protocol="postgres"`) {
			var v float64
			fmt.Sscan(l[strings.LastIndexByte(l, ' ')+1:], &v)
			sum += v
		}
	}
	return sum
}
