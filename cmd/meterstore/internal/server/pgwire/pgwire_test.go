package pgwire

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/store"
)

// refusing is a Store that refuses every statement as a write: the
// server's own handling is under test, not the store's.
type refusing struct{}

func (refusing) Prepare(context.Context, string, store.StatementOptions) (Statement, error) {
	return nil, fmt.Errorf("%w: this statement is not a SELECT", store.ErrNotReadOnly)
}

// testPassword is the token of the test's token "reporting".
const testPassword = "secret-token"

// testServer returns a server over a refusing store with the token
// "reporting" (scope query) and "ingester" (scope ingest), serving on a
// listener of 127.0.0.1, and its address.
func testServer(t *testing.T, o Options) (*Server, string) {
	t.Helper()
	o.Tokens = []config.Token{
		{Name: "reporting", Hash: sha256.Sum256([]byte(testPassword)), Scopes: []string{config.ScopeQuery}},
		{Name: "ingester", Hash: sha256.Sum256([]byte("ingest-token")), Scopes: []string{config.ScopeIngest}},
	}
	srv, err := newServer(refusing{}, o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv, ln.Addr().String()
}

// connect connects to addr as user with sslmode.
func connect(t *testing.T, addr, user, password, sslmode string) (*pgx.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://%s:%s@%s/meterstore?sslmode=%s", user, password, addr, sslmode))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLSConfig != nil {
		cfg.TLSConfig.InsecureSkipVerify = true // a self-signed test certificate
	}
	return pgx.ConnectConfig(ctx, cfg)
}

// codeOf returns the SQLSTATE of err.
func codeOf(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// TestPlaintextOffLoopback: a session of plain TCP on an address other
// than loopback is refused (28000) unless AllowPlaintext; over TLS it is
// admitted. The address is 127.0.0.1, seen as off loopback.
func TestPlaintextOffLoopback(t *testing.T) {
	offLoopback := func(net.Addr) bool { return false }
	srv, addr := testServer(t, Options{TLS: testTLS(t)})
	srv.loopback = offLoopback
	_, err := connect(t, addr, "reporting", testPassword, "disable")
	if codeOf(err) != "28000" || !strings.Contains(err.Error(), "requires TLS") {
		t.Errorf("plain TCP off loopback: %v, want 28000", err)
	}
	conn, err := connect(t, addr, "reporting", testPassword, "require")
	if err != nil {
		t.Fatalf("TLS off loopback: %v", err)
	}
	if !conn.PgConn().Conn().(interface{ ConnectionState() tls.ConnectionState }).ConnectionState().HandshakeComplete {
		t.Error("the session is not over TLS")
	}
	conn.Close(t.Context())

	srv, addr = testServer(t, Options{AllowPlaintext: true})
	srv.loopback = offLoopback
	conn, err = connect(t, addr, "reporting", testPassword, "disable")
	if err != nil {
		t.Fatalf("plain TCP off loopback with AllowPlaintext: %v", err)
	}
	conn.Close(t.Context())

	// Without a key pair, an SSLRequest is answered N: sslmode=require
	// fails, prefer falls back to plain TCP on loopback.
	_, addr = testServer(t, Options{})
	if _, err := connect(t, addr, "reporting", testPassword, "require"); err == nil {
		t.Error("sslmode=require against a server without TLS connected")
	}
	conn, err = connect(t, addr, "reporting", testPassword, "prefer")
	if err != nil {
		t.Fatalf("sslmode=prefer on loopback: %v", err)
	}
	conn.Close(t.Context())
}

// TestLogin: a wrong password, an unknown user, a token under another
// name and a token without scope query are refused alike (28P01); the
// refusing store answers a statement of an admitted session, and the
// session statements are answered by the session.
func TestLogin(t *testing.T) {
	_, addr := testServer(t, Options{})
	var msgs []string
	for _, c := range [][2]string{{"reporting", "wrong"}, {"nosuch", testPassword}, {"ingester", testPassword}, {"ingester", "ingest-token"}} {
		_, err := connect(t, addr, c[0], c[1], "disable")
		if codeOf(err) != "28P01" {
			t.Fatalf("login as %s: %v, want 28P01", c[0], err)
		}
		var pe *pgconn.PgError
		errors.As(err, &pe)
		msgs = append(msgs, strings.Replace(pe.Message, c[0], "USER", 1))
	}
	for _, m := range msgs[1:] {
		if m != msgs[0] {
			t.Errorf("failed logins told apart: %q", msgs)
		}
	}
	conn, err := connect(t, addr, "reporting", testPassword, "disable")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), "SELECT 1"); codeOf(err) != "25006" {
		t.Errorf("a statement the store refuses as a write: %v, want 25006", err)
	}
	if v := conn.PgConn().ParameterStatus("server_version"); v != "15.0" {
		t.Errorf("server_version %q", v)
	}
	if _, err := conn.Exec(t.Context(), "SET application_name = 'grafana'"); err != nil {
		t.Fatal(err)
	}
	if v := conn.PgConn().ParameterStatus("application_name"); v != "grafana" {
		t.Errorf("application_name after SET: %q", v)
	}
	var v string
	if err := conn.QueryRow(t.Context(), "SHOW application_name").Scan(&v); err != nil || v != "grafana" {
		t.Errorf("SHOW application_name: %q, %v", v, err)
	}
	if _, err := conn.Exec(t.Context(), "BEGIN"); err != nil || conn.PgConn().TxStatus() != 'T' {
		t.Errorf("BEGIN: %v, status %c", err, conn.PgConn().TxStatus())
	}
	if _, err := conn.Exec(t.Context(), "COMMIT"); err != nil || conn.PgConn().TxStatus() != 'I' {
		t.Errorf("COMMIT: %v, status %c", err, conn.PgConn().TxStatus())
	}
	if _, err := conn.Exec(t.Context(), "BEGIN READ WRITE"); codeOf(err) != "25006" {
		t.Errorf("BEGIN READ WRITE: %v, want 25006", err)
	}
}

// TestMaxConnections: past MaxConnections a session is refused (53300);
// one closed frees its place.
func TestMaxConnections(t *testing.T) {
	_, addr := testServer(t, Options{MaxConnections: 1})
	first, err := connect(t, addr, "reporting", testPassword, "disable")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := connect(t, addr, "reporting", testPassword, "disable"); codeOf(err) != "53300" {
		t.Errorf("a second session of one allowed: %v, want 53300", err)
	}
	first.Close(t.Context())
	for i := 0; ; i++ {
		c, err := connect(t, addr, "reporting", testPassword, "disable")
		if err == nil {
			c.Close(t.Context())
			break
		}
		if i == 50 {
			t.Fatalf("no session after the first closed: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // the first's goroutine ends
	}
}

// TestShutdown: Shutdown ends an idle session with 57P01 at once.
func TestShutdown(t *testing.T) {
	srv, addr := testServer(t, Options{})
	conn, err := connect(t, addr, "reporting", testPassword, "disable")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with an idle session: %v", err)
	}
	if _, err := conn.Exec(t.Context(), "SHOW TimeZone"); err == nil {
		t.Error("the idle session answers after Shutdown")
	}
}

// testTLS returns a TLS configuration of a self-signed certificate.
func testTLS(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pgwire test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
}

// TestStartupSettings: the settings of the startup message and of its
// options are the session's; a time zone other than UTC is kept at UTC,
// as the reported TimeZone says.
func TestStartupSettings(t *testing.T) {
	_, addr := testServer(t, Options{})
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://reporting:%s@%s/meterstore?sslmode=disable", testPassword, addr))
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["options"] = `-c statement_timeout=250ms --meterstore.mode=historical -c application_name=a\ b`
	cfg.RuntimeParams["TimeZone"] = "Europe/Berlin"
	conn, err := pgx.ConnectConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	for name, want := range map[string]string{"statement_timeout": "250ms", "meterstore.mode": "historical", "application_name": "a b", "TimeZone": "UTC"} {
		var got string
		if err := conn.QueryRow(t.Context(), "SHOW "+name).Scan(&got); err != nil || got != want {
			t.Errorf("SHOW %s: %q, %v; want %q", name, got, err, want)
		}
	}
	if tz := conn.PgConn().ParameterStatus("TimeZone"); tz != "UTC" {
		t.Errorf("TimeZone reported %q", tz)
	}
}
