package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key,
// as PEM, to certFile and keyFile, and returns the certificate.
func selfSigned(t *testing.T, certFile, keyFile string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: "meterstore test"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // its own root, for the clients' pools
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), 0o600); err != nil {
		t.Fatal(err)
	}
	return cert
}

// withServerKeys returns the configuration text with the [server] keys
// of the template replaced, each by its key = value line in set.
func withServerKeys(t *testing.T, text string, set map[string]string) string {
	t.Helper()
	for _, old := range []string{`listen = "127.0.0.1:8080"`, `tls_cert = ""`, `tls_key = ""`, `allow_plain_http = false`} {
		key, _, _ := strings.Cut(old, " =")
		line, ok := set[key]
		if !ok {
			continue
		}
		if !strings.Contains(text, old) {
			t.Fatalf("the configuration has no line %s", old)
		}
		text = strings.Replace(text, old, key+" = "+line, 1)
	}
	return text
}

// tlsServe is a meterstore serve process the TLS test started.
type tlsServe struct {
	cmd     *exec.Cmd
	stderr  *lockedBuffer
	exited  chan struct{}
	waitErr error
}

// startTLSServe runs bin serve -c cfgPath and returns it and the address it
// says it serves, within a bounded wait; the process is killed at the
// end of the test unless it has exited.
func startTLSServe(t *testing.T, bin, cfgPath string) (*tlsServe, string) {
	t.Helper()
	p := &tlsServe{cmd: exec.Command(bin, "serve", "-c", cfgPath), stderr: &lockedBuffer{}, exited: make(chan struct{})}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				<-p.exited
				t.Fatalf("serve exited before serving: %v\n%s", p.waitErr, p.stderr.String())
			}
			if addr, found := strings.CutPrefix(l, "serving "); found {
				return p, addr
			}
		case <-deadline:
			t.Fatalf("serve did not say where it serves within 2 minutes\n%s", p.stderr.String())
		}
	}
}

// stop sends SIGTERM and expects exit 0 within a bounded wait.
func (p *tlsServe) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
		if p.waitErr != nil {
			t.Errorf("after SIGTERM: %v\n%s", p.waitErr, p.stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("serve did not exit within a minute of SIGTERM\n%s", p.stderr.String())
	}
}

// TestServeTLS runs the real binary with server.tls_cert and tls_key set
// to a self-signed certificate for 127.0.0.1: HTTPS answers a client that
// trusts the certificate (Go's and Python's), and refuses one that does
// not; plain HTTP to the port gets no answer of the API; a key that does
// not match the certificate, a missing file and a file without PEM fail
// serve at startup, naming the keys.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	cfgPath, _ := deploymentConfig(t, dir)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	cert := selfSigned(t, certFile, keyFile)
	tok, section := parseToken(t, mustRun(t, "token", "--name", "reporting", "--scope", "query"))
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	base := string(text) + "\n" + section
	write := func(set map[string]string) {
		t.Helper()
		if err := os.WriteFile(cfgPath, []byte(withServerKeys(t, base, set)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(map[string]string{"listen": `"127.0.0.1:0"`, "tls_cert": `"cert.pem"`, "tls_key": `"key.pem"`})
	mustRun(t, "create", "-c", cfgPath)

	p, addr := startTLSServe(t, bin, cfgPath)
	host, ok := strings.CutPrefix(addr, "https://")
	if !ok || !strings.HasPrefix(host, "127.0.0.1:") || strings.HasSuffix(host, ":0") {
		t.Fatalf("serving %q; want https://127.0.0.1:<port>", addr)
	}

	// A client that trusts the certificate: the API answers.
	roots := x509.NewCertPool()
	roots.AddCert(cert)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	get := func(c *http.Client, url, tok string) (int, map[string]any, *http.Response, error) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "GET", url, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, nil, nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var body map[string]any
		json.Unmarshal(b, &body)
		return resp.StatusCode, body, resp, nil
	}
	if code, body, resp, err := get(client, addr+"/healthz", ""); err != nil || code != 200 || body["status"] != "ok" {
		t.Errorf("GET /healthz over HTTPS: %d %v %v", code, body, err)
	} else if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 || !resp.TLS.PeerCertificates[0].Equal(cert) {
		t.Errorf("GET /healthz: not served with the configured certificate: %+v", resp.TLS)
	}
	if code, body, _, err := get(client, addr+"/v1/status", tok); err != nil || code != 200 || body["tables"] == nil {
		t.Errorf("GET /v1/status over HTTPS: %d %v %v", code, body, err)
	}
	// A client that does not trust it is refused the handshake.
	untrusting := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: x509.NewCertPool()}}}
	var unknown x509.UnknownAuthorityError
	if _, _, _, err := get(untrusting, addr+"/healthz", ""); !errors.As(err, &unknown) {
		t.Errorf("GET /healthz trusting no root: %v; want an unknown authority", err)
	}
	// Plain HTTP to the TLS port: Go's server answers 400 before any
	// route, or the connection fails; never the API's answer.
	code, body, _, err := get(&http.Client{Timeout: 30 * time.Second}, "http://"+host+"/healthz", "")
	if err == nil && (code != http.StatusBadRequest || body != nil) {
		t.Errorf("plain HTTP to the TLS port: %d %v; want a failure", code, body)
	}

	t.Run("python", func(t *testing.T) {
		if _, err := exec.LookPath("python3"); err != nil {
			t.Skip("python3 is not installed")
		}
		const script = `import json, ssl, sys, urllib.request
ctx = ssl.create_default_context(cafile=sys.argv[2])
req = urllib.request.Request(sys.argv[1] + "/v1/status", headers={"Authorization": "Bearer " + sys.argv[3]})
with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
    body = json.load(resp)
    print(resp.status, len(body["tables"]))
`
		out, err := exec.CommandContext(t.Context(), "python3", "-c", script, addr, certFile, tok).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "200 2" {
			t.Errorf("python urllib over HTTPS: %v\n%s", err, out)
		}
	})
	p.stop(t)

	// A wrong pair, a missing file, a file without PEM: serve fails at
	// startup, before it listens, naming the keys and why.
	otherCert, otherKey := filepath.Join(dir, "other-cert.pem"), filepath.Join(dir, "other-key.pem")
	selfSigned(t, otherCert, otherKey)
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, cert, key, want string
	}{
		{"key of another certificate", certFile, otherKey, "private key does not match public key"},
		{"missing certificate", filepath.Join(dir, "missing.pem"), keyFile, "missing.pem: no such file"},
		{"certificate without PEM", garbage, keyFile, "failed to find any PEM data in certificate input"},
		{"certificate as key", certFile, certFile, "found a certificate rather than a key"},
	} {
		write(map[string]string{"listen": `"127.0.0.1:0"`, "tls_cert": `"` + tc.cert + `"`, "tls_key": `"` + tc.key + `"`})
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		out, err := exec.CommandContext(ctx, bin, "serve", "-c", cfgPath).CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitPermanent ||
			!strings.Contains(string(out), "server.tls_cert and server.tls_key") || !strings.Contains(string(out), tc.want) ||
			strings.Contains(string(out), "serving ") {
			t.Errorf("%s: %v; want exit %d naming the keys and %q\n%s", tc.name, err, exitPermanent, tc.want, out)
		}
	}
}

// TestCheckPlainHTTP: meterstore check refuses plain HTTP on an address
// other than loopback unless allow_plain_http is set or TLS is
// configured.
func TestCheckPlainHTTP(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "meterstore.toml")
	mustRun(t, "init", cfgPath)
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		set  map[string]string
		code int
	}{
		{"every interface, plain", map[string]string{"listen": `"0.0.0.0:8443"`}, exitPermanent},
		{"a public address, plain", map[string]string{"listen": `"192.0.2.7:80"`}, exitPermanent},
		{"every interface, plain allowed", map[string]string{"listen": `"0.0.0.0:8443"`, "allow_plain_http": "true"}, 0},
		{"every interface, TLS", map[string]string{"listen": `"0.0.0.0:8443"`, "tls_cert": `"cert.pem"`, "tls_key": `"key.pem"`}, 0},
		{"loopback, plain", map[string]string{"listen": `"127.0.0.1:8443"`}, 0},
	} {
		if err := os.WriteFile(cfgPath, []byte(withServerKeys(t, string(text), tc.set)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, code := run(t, "check", "-c", cfgPath)
		if code != tc.code || (code != 0 && (!strings.Contains(out, "server.listen") || !strings.Contains(out, "allow_plain_http"))) {
			t.Errorf("%s: exit %d; want %d\n%s", tc.name, code, tc.code, out)
		}
	}
}
