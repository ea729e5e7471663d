package config

import (
	"crypto/sha256"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// hashOf returns the hash key of token as the file writes it.
func hashOf(token string) string {
	return fmt.Sprintf("%s%x", HashPrefix, sha256.Sum256([]byte(token)))
}

func TestServer(t *testing.T) {
	c := mustParse(t, `
[server]
listen = "0.0.0.0:8443"
flight_listen = "0.0.0.0:8444"
tls_cert = "tls/cert.pem"
tls_key = "/etc/ms/key.pem"
read_timeout = "10s"
write_timeout = "1h"
shutdown_timeout = "1m"
max_body_bytes = "1GiB"
max_concurrent_requests = 3
max_running_queries = 2
idempotency_retention = "2h"
catalog_writable = true
catalog_token_lifetime = "15m"
catalog_name = "meterstore"

[[server.token]]
name = "billing"
hash = "`+hashOf("secret-1")+`"
scopes = ["ingest", "query"]
tables = ["power"]

[[server.token]]
name = "ops.admin"
hash = "sha256:`+strings.ToUpper(hashOf("secret-2")[len(HashPrefix):])+`"
scopes = ["admin"]

[[table]]
name = "power"
`, "/srv/ms", nil)
	want := Server{
		Listen: "0.0.0.0:8443", FlightListen: "0.0.0.0:8444", TLSCert: "/srv/ms/tls/cert.pem", TLSKey: "/etc/ms/key.pem",
		ReadTimeout: 10 * time.Second, WriteTimeout: time.Hour, ShutdownTimeout: time.Minute, MaxBodyBytes: 1 << 30,
		MaxConcurrentRequests: 3, MaxRunningQueries: 2, IdempotencyRetention: 2 * time.Hour,
		CatalogWritable: true, CatalogTokenLifetime: 15 * time.Minute, CatalogName: "meterstore",
		Tokens: []Token{
			{Name: "billing", Hash: sha256.Sum256([]byte("secret-1")), Scopes: []string{"ingest", "query"}, Tables: []string{"power"}},
			{Name: "ops.admin", Hash: sha256.Sum256([]byte("secret-2")), Scopes: []string{"admin"}},
		},
	}
	if !reflect.DeepEqual(c.Server, want) {
		t.Errorf("server =\n%+v\nwant\n%+v", c.Server, want)
	}

	// Plain HTTP on loopback needs nothing; elsewhere it needs consent.
	for _, addr := range []string{"127.0.0.1:0", "[::1]:8080", "localhost:9000"} {
		mustParse(t, "[server]\nlisten = \""+addr+"\"\n", "/srv/ms", nil)
	}
	// Both on port 0 is two free ports.
	mustParse(t, "[server]\nlisten = \"127.0.0.1:0\"\nflight_listen = \"127.0.0.1:0\"\n", "/srv/ms", nil)
	c = mustParse(t, "[server]\nlisten = \":8080\"\nflight_listen = \":8815\"\nallow_plain_http = true\n", "/srv/ms", nil)
	if !c.Server.AllowPlainHTTP {
		t.Errorf("allow_plain_http = true read as false")
	}
	// The PostgreSQL protocol: loopback, or consent of its own
	// (allow_plain_http is not it), or TLS.
	c = mustParse(t, "[server]\nlisten = \"127.0.0.1:0\"\npg_listen = \"127.0.0.1:5433\"\n", "/srv/ms", nil)
	if c.Server.PgListen != "127.0.0.1:5433" || c.Server.PgAllowPlaintext {
		t.Errorf("pg_listen read as %q, pg_allow_plaintext %v", c.Server.PgListen, c.Server.PgAllowPlaintext)
	}
	c = mustParse(t, "[server]\nlisten = \"127.0.0.1:0\"\npg_listen = \":5433\"\npg_allow_plaintext = true\n", "/srv/ms", nil)
	if !c.Server.PgAllowPlaintext {
		t.Errorf("pg_allow_plaintext = true read as false")
	}
	mustParse(t, "[server]\nlisten = \":8443\"\npg_listen = \":5433\"\ntls_cert = \"c.pem\"\ntls_key = \"k.pem\"\n", "/srv/ms", nil)
}

// TestServerProblems: each mistake of a [server] section is reported with
// its key and line, and a plaintext token is refused without being
// echoed.
func TestServerProblems(t *testing.T) {
	good := hashOf("secret")
	for _, tc := range []struct {
		name string
		src  string
		key  string
		line int
		want string
	}{
		{"plain HTTP on every interface", "[server]\nlisten = \":8080\"\n", "server.listen", 2, "not a loopback address"},
		{"plain HTTP on a public address", "[server]\nlisten = \"192.0.2.7:80\"\n", "server.listen", 2, "allow_plain_http"},
		{"plain Flight SQL on a public address", "[server]\nflight_listen = \"192.0.2.7:8815\"\n", "server.flight_listen", 2, "plain gRPC"},
		{"Flight SQL on the HTTP address", "[server]\nlisten = \"127.0.0.1:8080\"\nflight_listen = \"127.0.0.1:8080\"\n", "server.flight_listen", 3, "an address of its own"},
		{"plain PostgreSQL on a public address", "[server]\npg_listen = \"192.0.2.7:5432\"\n", "server.pg_listen", 2, "pg_allow_plaintext"},
		{"plain PostgreSQL despite allow_plain_http", "[server]\nlisten = \":8080\"\nallow_plain_http = true\npg_listen = \":5432\"\n", "server.pg_listen", 4, "in the clear"},
		{"PostgreSQL on the HTTP address", "[server]\nlisten = \"127.0.0.1:8080\"\npg_listen = \"127.0.0.1:8080\"\n", "server.pg_listen", 3, "an address of its own"},
		{"Flight SQL without port", "[server]\nflight_listen = \"127.0.0.1\"\n", "server.flight_listen", 2, "want host:port"},
		{"listen without port", "[server]\nlisten = \"127.0.0.1\"\n", "server.listen", 2, "want host:port"},
		{"listen with a bad port", "[server]\nlisten = \"127.0.0.1:http\"\n", "server.listen", 2, "want 0 to 65535"},
		{"certificate without key", "[server]\ntls_cert = \"c.pem\"\n", "server.tls_key", 1, "set both"},
		{"key without certificate", "[server]\ntls_key = \"k.pem\"\n", "server.tls_cert", 1, "set both"},
		{"unitless read timeout", "[server]\nread_timeout = 30\n", "server.read_timeout", 2, "write 30s"},
		{"zero shutdown timeout", "[server]\nshutdown_timeout = \"0s\"\n", "server.shutdown_timeout", 2, "positive"},
		{"tiny body", "[server]\nmax_body_bytes = 10\n", "server.max_body_bytes", 2, "at least 1KiB"},
		{"huge body", "[server]\nmax_body_bytes = \"1TiB\"\n", "server.max_body_bytes", 2, "at most 64GiB"},
		{"no concurrency", "[server]\nmax_concurrent_requests = 0\n", "server.max_concurrent_requests", 2, "want 1 to 100000"},
		{"negative concurrency", "[server]\nmax_concurrent_requests = -4\n", "server.max_concurrent_requests", 2, "want 1 to 100000"},
		{"concurrency of a data centre", "[server]\nmax_concurrent_requests = 1000000\n", "server.max_concurrent_requests", 2, "want 1 to 100000"},
		{"concurrency as text", "[server]\nmax_concurrent_requests = \"16\"\n", "server.max_concurrent_requests", 2, "want an integer"},
		{"negative running queries", "[server]\nmax_running_queries = -1\n", "server.max_running_queries", 2, "want 0 to 100000"},
		{"unitless retention", "[server]\nidempotency_retention = 24\n", "server.idempotency_retention", 2, "write 24h"},
		{"no retention", "[server]\nidempotency_retention = \"0s\"\n", "server.idempotency_retention", 2, "want 1m to 366d"},
		{"retention shorter than a retry", "[server]\nidempotency_retention = \"10s\"\n", "server.idempotency_retention", 2, "want 1m to 366d"},
		{"retention of years", "[server]\nidempotency_retention = \"1000d\"\n", "server.idempotency_retention", 2, "want 1m to 366d"},
		{"catalog token for days", "[server]\ncatalog_token_lifetime = \"7d\"\n", "server.catalog_token_lifetime", 2, "want 1m to 1d"},
		{"catalog token for seconds", "[server]\ncatalog_token_lifetime = \"5s\"\n", "server.catalog_token_lifetime", 2, "want 1m to 1d"},
		{"catalog name with a dot", "[server]\ncatalog_name = \"ms.prod\"\n", "server.catalog_name", 2, "want lower-case letters"},
		{"catalog name in capitals", "[server]\ncatalog_name = \"MeterStore\"\n", "server.catalog_name", 2, "want lower-case letters"},
		{"catalog writable as text", "[server]\ncatalog_writable = \"yes\"\n", "server.catalog_writable", 2, ""},
		{"token not an array", "[server.token]\nname = \"a\"\n", "server.token", 1, "[[server.token]]"},
		{"unknown scope", "[[server.token]]\nname = \"a\"\nhash = \"" + good + "\"\nscopes = [\"query\", \"write\"]\n", "server.token[0].scopes", 4, `"write": want "ingest", "query", "catalog", "storage" or "admin"`},
		{"scope twice", "[[server.token]]\nname = \"a\"\nhash = \"" + good + "\"\nscopes = [\"query\", \"query\"]\n", "server.token[0].scopes", 4, "listed twice"},
		{"no scopes", "[[server.token]]\nname = \"a\"\nhash = \"" + good + "\"\nscopes = []\n", "server.token[0].scopes", 4, "opens nothing"},
		{"scopes left out", "[[server.token]]\nname = \"a\"\nhash = \"" + good + "\"\n", "server.token[0].scopes", 1, "required"},
		{"hash without prefix", "[[server.token]]\nname = \"a\"\nhash = \"" + good[len(HashPrefix):] + "\"\nscopes = [\"query\"]\n", "server.token[0].hash", 3, `want "sha256:"`},
		{"short hash", "[[server.token]]\nname = \"a\"\nhash = \"sha256:abcd\"\nscopes = [\"query\"]\n", "server.token[0].hash", 3, "64 hex digits"},
		{"hash left out", "[[server.token]]\nname = \"a\"\nscopes = [\"query\"]\n", "server.token[0].hash", 1, "required"},
		{"bad name", "[[server.token]]\nname = \"a b\"\nhash = \"" + good + "\"\nscopes = [\"query\"]\n", "server.token[0].name", 2, "want a letter or digit"},
		{"duplicate name", "[[server.token]]\nname = \"a\"\nhash = \"" + good + "\"\nscopes = [\"query\"]\n[[server.token]]\nname = \"a\"\nhash = \"" + hashOf("other") + "\"\nscopes = [\"admin\"]\n", "server.token[1].name", 6, `token "a" is declared twice (first as server.token[0], line 2)`},
		{"duplicate hash", "[[server.token]]\nname = \"a\"\nhash = \"" + good + "\"\nscopes = [\"query\"]\n[[server.token]]\nname = \"b\"\nhash = \"" + good + "\"\nscopes = [\"admin\"]\n", "server.token[1].hash", 7, "same hash as server.token[0]"},
		{"undeclared table", "[[server.token]]\nname = \"a\"\nhash = \"" + good + "\"\nscopes = [\"query\"]\ntables = [\"water\"]\n", "server.token[0].tables", 5, `"water" is not a declared table`},
		{"unknown token key", "[[server.token]]\nname = \"a\"\nhash = \"" + good + "\"\nscopes = [\"query\"]\nscope = [\"admin\"]\n", "server.token[0].scope", 5, "did you mean scopes?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := problems(t, tc.src)
			if len(es) != 1 {
				t.Fatalf("problems = %v; want one", es)
			}
			if e := es[0]; e.Key != tc.key || e.Line != tc.line || !strings.Contains(e.Error(), tc.want) {
				t.Errorf("problem = %q (key %q, line %d); want key %q, line %d, containing %q", e, e.Key, e.Line, tc.key, tc.line, tc.want)
			}
		})
	}

	// The token itself, in either key, is refused and never echoed.
	for _, src := range []string{
		"[[server.token]]\nname = \"a\"\ntoken = \"s3cr3t-plaintext\"\nscopes = [\"query\"]\n",
		"[[server.token]]\nname = \"a\"\nhash = \"s3cr3t-plaintext\"\nscopes = [\"query\"]\n",
	} {
		es := problems(t, src)
		var all []string
		for _, e := range es {
			all = append(all, e.Error())
		}
		msg := strings.Join(all, "\n")
		if strings.Contains(msg, "s3cr3t") {
			t.Errorf("a problem echoes the plaintext token:\n%s", msg)
		}
		if strings.Contains(src, "token =") && !strings.Contains(msg, "server.token[0].token: the file must not hold a token itself") {
			t.Errorf("a plaintext token key was not refused with its reason:\n%s", msg)
		}
	}
}
