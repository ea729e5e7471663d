package config

import (
	"encoding/hex"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meterstore/meterstore/series"
)

// Server is the file's server section: the HTTP API of meterstore serve.
type Server struct {
	// Listen is the host:port to listen on (server.listen).
	Listen string
	// FlightListen is the host:port of the Arrow Flight SQL service;
	// empty means none (server.flight_listen).
	FlightListen string
	// PgListen is the host:port of the PostgreSQL wire protocol service;
	// empty means none (server.pg_listen).
	PgListen string
	// PgAllowPlaintext admits PostgreSQL sessions without TLS on an
	// address other than loopback, behind a proxy that terminates TLS
	// (server.pg_allow_plaintext).
	PgAllowPlaintext bool
	// TLSCert and TLSKey are the PEM files of the server's certificate and
	// key, absolute; both empty means plain HTTP (server.tls_cert,
	// server.tls_key).
	TLSCert, TLSKey string
	// AllowPlainHTTP permits plain HTTP, and plain gRPC for Flight SQL, on
	// an address other than loopback (server.allow_plain_http).
	AllowPlainHTTP bool
	// ReadTimeout bounds reading a request, headers and body
	// (server.read_timeout).
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response, from the end of the
	// request's headers (server.write_timeout).
	WriteTimeout time.Duration
	// ShutdownTimeout bounds the wait for requests in flight and the
	// maintenance cycle in flight on SIGTERM (server.shutdown_timeout).
	ShutdownTimeout time.Duration
	// MaxBodyBytes bounds a request body (server.max_body_bytes).
	MaxBodyBytes int64
	// MaxConcurrentRequests bounds the ingests served at once, and
	// separately the queries: one more is answered 503 at once rather
	// than queued (server.max_concurrent_requests).
	MaxConcurrentRequests int
	// MaxRunningQueries bounds the large SQL queries of POST /v1/query
	// running at once (small ones, over a few series, never wait); more wait their turn, among the MaxConcurrentRequests in
	// flight, so that queries cannot take every core from ingest. Zero
	// means as many as the cores hold, each running query.threads
	// (server.max_running_queries).
	MaxRunningQueries int
	// IdempotencyRetention is how long the outcome of an ingest sent with
	// an Idempotency-Key is kept to answer its retries
	// (server.idempotency_retention).
	IdempotencyRetention time.Duration
	// CatalogWritable serves the writes of the Iceberg REST catalog, to
	// tokens with the catalog scope; false serves it read-only
	// (server.catalog_writable).
	CatalogWritable bool
	// CatalogTokenLifetime is how long an access token that the catalog's
	// OAuth2 endpoint issues is accepted (server.catalog_token_lifetime).
	CatalogTokenLifetime time.Duration
	// CatalogName is the name the engines that read the catalog give it,
	// which each readings view carries as its default catalog (Trino
	// analyses a view only under one); "" gives the views none
	// (server.catalog_name).
	CatalogName string
	// CatalogVend hands the catalog's readers the key pair of an S3
	// warehouse (see CatalogVend); off by default (server.catalog_vend_*).
	CatalogVend CatalogVend
	// Tokens are the bearer tokens the server accepts ([[server.token]]).
	Tokens []Token
}

// A Token is one [[server.token]] section: a bearer token the server
// accepts, known by the SHA-256 of its text. The token itself is never
// in the file.
type Token struct {
	// Name identifies the token in logs (server.token[i].name).
	Name string
	// Hash is the SHA-256 of the token's text (server.token[i].hash,
	// written "sha256:" and 64 hex digits).
	Hash [32]byte
	// Scopes are what the token may do, each one of ScopeIngest,
	// ScopeQuery, ScopeCatalog, ScopeStorage and ScopeAdmin
	// (server.token[i].scopes).
	Scopes []string
	// Tables are the tables the token may touch; empty means every one
	// (server.token[i].tables).
	Tables []string
}

// The scopes a token may hold.
const (
	ScopeIngest  = "ingest"  // write readings
	ScopeQuery   = "query"   // run queries, read status
	ScopeCatalog = "catalog" // read the Iceberg REST catalog, and write it where allowed
	ScopeAdmin   = "admin"   // operate the deployment
	// ScopeStorage adds to ScopeCatalog the key pair of
	// Server.CatalogVend in each loaded table, for a client that asks.
	ScopeStorage = "storage"
)

// scopes are the scopes a token may hold, in the order messages list them.
var scopes = []string{ScopeIngest, ScopeQuery, ScopeCatalog, ScopeStorage, ScopeAdmin}

// The defaults and bounds of the server's limits.
const (
	defaultMaxConcurrentRequests = 16
	maxConcurrentRequests        = 100_000 // a goroutine and a connection's memory each
	defaultIdempotencyRetention  = 24 * time.Hour
	minIdempotencyRetention      = time.Minute
	maxIdempotencyRetention      = 366 * day
	defaultCatalogTokenLifetime  = time.Hour
	minCatalogTokenLifetime      = time.Minute
	maxCatalogTokenLifetime      = day
	maxShutdownTimeout           = time.Hour
)

// HashPrefix starts a token's hash in the file.
const HashPrefix = "sha256:"

// tokenName is a token's name: it appears in logs, so it is plain.
var tokenName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// catalogName is a catalog name every engine accepts unquoted.
var catalogName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// rawServer is the shape of the [server] section.
type rawServer struct {
	Listen          value      `toml:"listen"`
	FlightListen    value      `toml:"flight_listen"`
	PgListen        value      `toml:"pg_listen"`
	PgPlaintext     value      `toml:"pg_allow_plaintext"`
	TLSCert         value      `toml:"tls_cert"`
	TLSKey          value      `toml:"tls_key"`
	AllowPlainHTTP  value      `toml:"allow_plain_http"`
	ReadTimeout     value      `toml:"read_timeout"`
	WriteTimeout    value      `toml:"write_timeout"`
	ShutdownTimeout value      `toml:"shutdown_timeout"`
	MaxBodyBytes    value      `toml:"max_body_bytes"`
	MaxConcurrent   value      `toml:"max_concurrent_requests"`
	MaxRunning      value      `toml:"max_running_queries"`
	IdemRetention   value      `toml:"idempotency_retention"`
	CatalogWritable value      `toml:"catalog_writable"`
	CatalogTokenTTL value      `toml:"catalog_token_lifetime"`
	CatalogName     value      `toml:"catalog_name"`
	VendCredentials value      `toml:"catalog_vend_credentials"`
	VendKeyID       value      `toml:"catalog_vend_access_key_id"`
	VendSecret      value      `toml:"catalog_vend_secret_access_key"`
	Token           []rawToken `toml:"token"`
}

// rawToken is the shape of a [[server.token]] section.
type rawToken struct {
	Name   value `toml:"name"`
	Hash   value `toml:"hash"`
	Scopes value `toml:"scopes"`
	Tables value `toml:"tables"`
	// Token is a plaintext token, which the file must not hold; it is
	// known only to refuse it with a reason.
	Token value `toml:"token"`
}

// server reads the [server] section.
func (r *reader) server(raw *rawServer) Server {
	s := Server{
		Listen:          r.str("server.listen", raw.Listen, defaultListen),
		AllowPlainHTTP:  r.boolean("server.allow_plain_http", raw.AllowPlainHTTP, false),
		ReadTimeout:     r.atMost("server.read_timeout", r.positive("server.read_timeout", raw.ReadTimeout, defaultReadTimeout, "s"), maxReadTimeout, defaultReadTimeout, ""),
		WriteTimeout:    r.atMost("server.write_timeout", r.positive("server.write_timeout", raw.WriteTimeout, defaultWriteTimeout, "m"), maxWriteTimeout, defaultWriteTimeout, ""),
		ShutdownTimeout: r.positive("server.shutdown_timeout", raw.ShutdownTimeout, defaultShutdownTimeout, "s"),
		MaxBodyBytes:    r.boundedSize("server.max_body_bytes", raw.MaxBodyBytes, defaultMaxBodyBytes, minBodyBytes, maxBodyBytes),
		MaxConcurrentRequests: r.integer("server.max_concurrent_requests", raw.MaxConcurrent,
			defaultMaxConcurrentRequests, 1, maxConcurrentRequests),
		MaxRunningQueries:    r.integer("server.max_running_queries", raw.MaxRunning, 0, 0, maxConcurrentRequests),
		IdempotencyRetention: r.duration("server.idempotency_retention", raw.IdemRetention, defaultIdempotencyRetention, "h"),
		CatalogWritable:      r.boolean("server.catalog_writable", raw.CatalogWritable, false),
		CatalogTokenLifetime: r.duration("server.catalog_token_lifetime", raw.CatalogTokenTTL, defaultCatalogTokenLifetime, "m"),
		CatalogName:          r.str("server.catalog_name", raw.CatalogName, ""),
	}
	if n := s.CatalogName; n != "" && !catalogName.MatchString(n) && r.ok("server.catalog_name") {
		// Trino folds catalog names to lower case and allows no dots
		// or quotes in them: a name it cannot have would fail every
		// view at analysis.
		r.errorf("server.catalog_name", "%q: want lower-case letters, digits and _, starting with a letter", n)
		s.CatalogName = ""
	}
	if d := s.ShutdownTimeout; d > maxShutdownTimeout && r.ok("server.shutdown_timeout") {
		// Supervisors stop waiting long before (systemd after 90s,
		// Kubernetes after 30s by default), and a maintenance cycle
		// cut short is resumed by the next: a longer wait only hides a
		// shutdown that hangs.
		r.errorf("server.shutdown_timeout", "%v: want at most %v", Duration(d), Duration(maxShutdownTimeout))
		s.ShutdownTimeout = defaultShutdownTimeout
	}
	if d := s.CatalogTokenLifetime; (d < minCatalogTokenLifetime || d > maxCatalogTokenLifetime) && r.ok("server.catalog_token_lifetime") {
		// An access token cannot be revoked before it expires, short of
		// removing the [[server.token]] it was issued to: keep it short.
		r.errorf("server.catalog_token_lifetime", "%v: want %v to %v", Duration(d),
			Duration(minCatalogTokenLifetime), Duration(maxCatalogTokenLifetime))
		s.CatalogTokenLifetime = defaultCatalogTokenLifetime
	}
	if d := s.IdempotencyRetention; (d < minIdempotencyRetention || d > maxIdempotencyRetention) && r.ok("server.idempotency_retention") {
		// Shorter than a client's retries, a key would be forgotten
		// before it is used; the records of a year are a table to scan.
		r.errorf("server.idempotency_retention", "%v: want %v to %v", Duration(d),
			Duration(minIdempotencyRetention), Duration(maxIdempotencyRetention))
		s.IdempotencyRetention = defaultIdempotencyRetention
	}
	if cert := r.str("server.tls_cert", raw.TLSCert, ""); strings.TrimSpace(cert) != "" {
		s.TLSCert = r.abs(cert)
	}
	if key := r.str("server.tls_key", raw.TLSKey, ""); strings.TrimSpace(key) != "" {
		s.TLSKey = r.abs(key)
	}
	loopback, ok := r.listen("server.listen", s.Listen)
	switch {
	case (s.TLSCert == "") != (s.TLSKey == ""):
		key := "server.tls_key"
		if s.TLSCert == "" {
			key = "server.tls_cert"
		}
		r.errorf(key, "tls_cert and tls_key go together: set both for HTTPS, neither for plain HTTP")
	case s.TLSCert == "" && ok && !loopback && !s.AllowPlainHTTP:
		r.errorf("server.listen", "%q is not a loopback address, and plain HTTP would send every bearer token in the clear: "+
			"set tls_cert and tls_key, or allow_plain_http = true behind a proxy that terminates TLS", s.Listen)
	}
	if s.FlightListen = strings.TrimSpace(r.str("server.flight_listen", raw.FlightListen, "")); s.FlightListen != "" {
		loopback, ok := r.listen("server.flight_listen", s.FlightListen)
		switch {
		case ok && s.FlightListen == s.Listen && !strings.HasSuffix(s.Listen, ":0"):
			r.errorf("server.flight_listen", "%q is server.listen too: Flight SQL needs an address of its own", s.FlightListen)
		case ok && s.TLSCert == "" && !loopback && !s.AllowPlainHTTP:
			r.errorf("server.flight_listen", "%q is not a loopback address, and plain gRPC would send every bearer token in the clear: "+
				"set tls_cert and tls_key, or allow_plain_http = true behind a proxy that terminates TLS", s.FlightListen)
		}
	}
	s.PgAllowPlaintext = r.boolean("server.pg_allow_plaintext", raw.PgPlaintext, false)
	if s.PgListen = strings.TrimSpace(r.str("server.pg_listen", raw.PgListen, "")); s.PgListen != "" {
		loopback, ok := r.listen("server.pg_listen", s.PgListen)
		switch {
		case ok && (s.PgListen == s.Listen || s.PgListen == s.FlightListen) && !strings.HasSuffix(s.PgListen, ":0"):
			r.errorf("server.pg_listen", "%q is server.listen or server.flight_listen too: the PostgreSQL protocol needs an address of its own", s.PgListen)
		case ok && s.TLSCert == "" && !loopback && !s.PgAllowPlaintext:
			// Sessions log in with a cleartext password: the token.
			r.errorf("server.pg_listen", "%q is not a loopback address, and a plain TCP session would send its token in the clear: "+
				"set tls_cert and tls_key, or pg_allow_plaintext = true behind a proxy that terminates TLS", s.PgListen)
		}
	}
	s.CatalogVend = r.catalogVend(raw)
	for i := range raw.Token {
		s.Tokens = append(s.Tokens, r.token(fmt.Sprintf("server.token[%d]", i), &raw.Token[i]))
	}
	return s
}

// positive returns the duration at key, which must be positive.
func (r *reader) positive(key string, v value, def time.Duration, unit string) time.Duration {
	d := r.duration(key, v, def, unit)
	if d <= 0 && r.ok(key) {
		r.errorf(key, "want a positive duration")
		return def
	}
	return d
}

// listen checks the host:port at key and reports whether its host is a
// loopback address; ok is false if it is malformed.
func (r *reader) listen(key, addr string) (loopback, ok bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		r.errorf(key, "%q: want host:port, as in 127.0.0.1:8080 or [::1]:8080", addr)
		return false, false
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		r.errorf(key, "%q: port %q: want 0 to 65535", addr, port)
		return false, false
	}
	if host == "localhost" {
		return true, true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), true
}

// token reads the [[server.token]] section at key.
func (r *reader) token(key string, raw *rawToken) Token {
	var t Token
	if raw.Token.set {
		r.errorf(key+".token", "the file must not hold a token itself: write its hash instead, as meterstore token prints it")
	}
	if t.Name = r.required(key+".name", raw.Name); r.ok(key+".name") && !tokenName.MatchString(t.Name) {
		r.errorf(key+".name", "%q: want a letter or digit, then letters, digits, '_', '.' and '-', at most 64 bytes", t.Name)
	}
	hash := r.required(key+".hash", raw.Hash)
	if r.ok(key + ".hash") {
		digits, found := strings.CutPrefix(hash, HashPrefix)
		b, err := hex.DecodeString(digits)
		if !found || err != nil || len(b) != len(t.Hash) {
			// The value is not echoed: a plaintext token written here by
			// mistake must not reach a log.
			r.errorf(key+".hash", "want %q and the 64 hex digits of the token's SHA-256, as meterstore token prints it", HashPrefix)
		} else {
			copy(t.Hash[:], b)
		}
	}
	if !raw.Scopes.set {
		r.errorf(key+".scopes", "required: one or more of %s", oneOf(quoteAll(scopes)))
	}
	for _, s := range r.strs(key+".scopes", raw.Scopes) {
		switch {
		case !slices.Contains(scopes, s):
			r.errorf(key+".scopes", "%q: want %s", s, oneOf(quoteAll(scopes)))
		case slices.Contains(t.Scopes, s):
			r.errorf(key+".scopes", "%q is listed twice", s)
		default:
			t.Scopes = append(t.Scopes, s)
		}
	}
	if raw.Scopes.set && len(t.Scopes) == 0 && r.ok(key+".scopes") {
		r.errorf(key+".scopes", "want one or more of %s: a token without a scope opens nothing", oneOf(quoteAll(scopes)))
	}
	for _, name := range r.strs(key+".tables", raw.Tables) {
		if slices.Contains(t.Tables, name) {
			r.errorf(key+".tables", "%q is listed twice", name)
			continue
		}
		t.Tables = append(t.Tables, name)
	}
	r.checkStorageScope(key, t)
	return t
}

// checkTokens checks the tokens against each other and the declared
// tables.
func (r *reader) checkTokens(c *Config) {
	names, hashes := map[string]int{}, map[[32]byte]int{}
	for i, t := range c.Server.Tokens {
		key := fmt.Sprintf("server.token[%d]", i)
		if j, ok := names[t.Name]; ok && t.Name != "" && r.ok(key+".name") {
			r.errorf(key+".name", "token %q is declared twice (first as server.token[%d], line %d)",
				t.Name, j, r.line(fmt.Sprintf("server.token[%d].name", j)))
		} else if !ok {
			names[t.Name] = i
		}
		if j, ok := hashes[t.Hash]; ok && r.ok(key+".hash") {
			r.errorf(key+".hash", "the same hash as server.token[%d]: one token, two names", j)
		} else if !ok && r.ok(key+".hash") {
			hashes[t.Hash] = i
		}
		for _, name := range t.Tables {
			if !slices.ContainsFunc(c.tables, func(d series.Table) bool { return d.Name == name }) {
				r.errorf(key+".tables", "%q is not a declared table", name)
			}
		}
	}
}

// quoteAll quotes each of ss.
func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}
