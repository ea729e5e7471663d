package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"
)

// A toxiproxy is the HTTP API of a Toxiproxy server (.ci/toxiproxy.sh
// starts one and exports MS_TEST_TOXIPROXY): proxies between MeterStore
// and its servers, each with toxics that break the traffic through it.
// The API is spoken with net/http; no client library is needed.
type toxiproxy struct {
	api string
	hc  *http.Client
}

// newToxiproxy returns the server MS_TEST_TOXIPROXY names. Without it the
// test fails when CI is set, so that a CI run cannot silently lose it, and
// is skipped otherwise.
func newToxiproxy(t *testing.T) *toxiproxy {
	t.Helper()
	api := os.Getenv("MS_TEST_TOXIPROXY")
	if api == "" {
		const msg = "MS_TEST_TOXIPROXY is not set; start a server with: eval \"$(.ci/toxiproxy.sh)\""
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return &toxiproxy{api: api, hc: &http.Client{Timeout: 10 * time.Second}}
}

// call sends body, if any, as JSON and returns the answer's body; an
// answer other than 2xx is an error.
func (tp *toxiproxy) call(method, path string, body any) ([]byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, tp.api+path, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := tp.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("toxiproxy: %s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return b, nil
}

// A proxy is one Toxiproxy proxy: it listens on 127.0.0.1 and forwards to
// its upstream, through its toxics.
type proxy struct {
	tp     *toxiproxy
	name   string
	listen string // host:port
}

// proxy creates a proxy named name (unique on the server) listening on a
// free port of 127.0.0.1 and forwarding to upstream; it is deleted when t
// ends.
func (tp *toxiproxy) proxy(t *testing.T, name, upstream string) *proxy {
	t.Helper()
	b, err := tp.call("POST", "/proxies", map[string]any{
		"name": name, "listen": "127.0.0.1:0", "upstream": upstream, "enabled": true,
	})
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Listen string `json:"listen"`
	}
	if err := json.Unmarshal(b, &p); err != nil || p.Listen == "" {
		t.Fatalf("toxiproxy: creating %s: %s: %v", name, b, err)
	}
	t.Cleanup(func() { tp.call("DELETE", "/proxies/"+name, nil) })
	return &proxy{tp: tp, name: name, listen: p.Listen}
}

// toxic adds a toxic of type typ named name to stream ("upstream", from
// MeterStore to the server, or "downstream"), applied to each connection
// with probability toxicity. A toxic added later sits after the earlier
// ones in a connection's chain: what they hold passes through it.
func (p *proxy) toxic(name, typ, stream string, toxicity float64, attrs map[string]any) error {
	_, err := p.tp.call("POST", "/proxies/"+p.name+"/toxics", map[string]any{
		"name": name, "type": typ, "stream": stream, "toxicity": toxicity, "attributes": attrs,
	})
	return err
}

// setEnabled enables or disables the proxy: disabled, it closes every
// connection through it and refuses new ones.
func (p *proxy) setEnabled(on bool) error {
	_, err := p.tp.call("POST", "/proxies/"+p.name, map[string]any{"enabled": on})
	return err
}

// heal removes every toxic and enables the proxy.
func (p *proxy) heal() error {
	b, err := p.tp.call("GET", "/proxies/"+p.name+"/toxics", nil)
	if err != nil {
		return err
	}
	var toxics []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(b, &toxics); err != nil {
		return err
	}
	for _, x := range toxics {
		if _, err := p.tp.call("DELETE", "/proxies/"+p.name+"/toxics/"+x.Name, nil); err != nil {
			return err
		}
	}
	return p.setEnabled(true)
}
