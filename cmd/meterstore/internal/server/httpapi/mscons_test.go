package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/config"
)

// msconsMessage is one MSCONS 2.4c message with n quarter hours of
// market location 20000000008 from start, its values qualified by q.
func msconsMessage(ref string, start time.Time, n int, q string) string {
	segs := []string{"UNH+" + ref + "+MSCONS:D:04B:UN:2.4c", "BGM+7+DOC" + ref + "+9",
		"DTM+137:" + start.Format("200601021504") + "?+00:303", "NAD+MS+9900000000003::293", "UNS+D", "NAD+DP",
		"LOC+172+20000000008", "LIN+1", "PIA+5+1-1?:1.29.0:SRW"}
	for i := range n {
		from := start.Add(time.Duration(i) * 15 * time.Minute)
		segs = append(segs, fmt.Sprintf("QTY+%s:%d.5:KWH", q, i), "DTM+163:"+from.Format("200601021504")+"?+00:303",
			"DTM+164:"+from.Add(15*time.Minute).Format("200601021504")+"?+00:303")
	}
	segs = append(segs, fmt.Sprintf("UNT+%d+%s", len(segs)+1, ref))
	return strings.Join(segs, "'") + "'"
}

func msconsInterchange(msgs ...string) string {
	return "UNA:+.? 'UNB+UNOC:3+9900000000003:500+9900000000010:500+260101:0000+IC++TL'" +
		strings.Join(msgs, "") + fmt.Sprintf("UNZ+%d+IC'", len(msgs))
}

// TestIngestMSCONS: an application/EDIFACT body is written a message at a
// time; a refused message is named with its segment beside the stored one,
// and every answer conforms to the OpenAPI document.
func TestIngestMSCONS(t *testing.T) {
	d := parseOpenAPI(t)
	s := openStore(t)
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	if err := s.EnsurePartitions(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	loader, tok := token(t, "loader", config.ScopeIngest)
	h, err := New(s, Options{Tokens: []config.Token{loader}})
	if err != nil {
		t.Fatal(err)
	}
	small, err := New(s, Options{Tokens: []config.Token{loader}, MaxBodyBytes: 2048})
	if err != nil {
		t.Fatal(err)
	}
	sendTo := func(h http.Handler, body string) (int, map[string]any) {
		t.Helper()
		r := httptest.NewRequest("POST", "/v1/tables/power/readings", strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+tok)
		r.Header.Set("Content-Type", "application/EDIFACT")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		d.conforms(t, "POST", ingestPath, w)
		var out map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("body %q: %v", w.Body, err)
		}
		return w.Code, out
	}
	send := func(body string) (int, map[string]any) { t.Helper(); return sendTo(h, body) }
	good := msconsMessage("M1", day, 4, "220")
	code, out := send(msconsInterchange(good, msconsMessage("M2", day.Add(time.Hour), 4, "999")))
	msgs, _ := out["messages"].([]any)
	if code != 422 || out["code"] != "refused" || len(msgs) != 2 || out["inserted"] != 4.0 {
		t.Fatalf("a good and a bad message: %d %v", code, out)
	}
	if m := msgs[0].(map[string]any); m["inserted"] != 4.0 || m["error"] != nil {
		t.Errorf("message 1: %v", m)
	}
	if m := msgs[1].(map[string]any); !strings.Contains(fmt.Sprint(m["error"]), `segment 10 (QTY): quantity qualifier "999"`) || m["inserted"] != 0.0 {
		t.Errorf("message 2: %v", m)
	}
	if n := countRows(t, s); n != "4" {
		t.Errorf("%s readings stored, want 4", n)
	}
	// Redelivered: all present.
	code, out = send(msconsInterchange(good))
	if code != 200 || counts(out) != "inserted=0 present=4 late=0 batches=1" {
		t.Errorf("redelivery: %d %v", code, out)
	}
	// A broken envelope writes nothing.
	code, out = send(strings.Replace(msconsInterchange(msconsMessage("M3", day.Add(2*time.Hour), 4, "220")), "UNZ+1", "UNZ+7", 1))
	if code != 422 || !strings.Contains(fmt.Sprint(out["error"]), "interchange control count") {
		t.Errorf("broken envelope: %d %v", code, out)
	}
	if n := countRows(t, s); n != "4" {
		t.Errorf("%s readings stored after the broken envelope, want 4", n)
	}
	// A segment past edifact.MaxSegmentBytes refuses the interchange; a
	// body past server.max_body_bytes is too large, whatever it holds.
	long := msconsMessage("M4", day.Add(3*time.Hour), 4, "220")
	long = strings.Replace(long, "BGM+7+DOCM4", "BGM+7+DOC"+strings.Repeat("4", 70_000), 1)
	code, out = send(msconsInterchange(long))
	if code != 422 || !strings.Contains(fmt.Sprint(out["error"]), "segment 3 (BGM): longer than 65536 bytes") {
		t.Errorf("a segment of 70 kB: %d %v", code, out)
	}
	code, out = sendTo(small, msconsInterchange(msconsMessage("M5", day.Add(4*time.Hour), 40, "220")))
	if code != 413 || out["code"] != "too_large" {
		t.Errorf("an interchange past max_body_bytes: %d %v", code, out)
	}
	if code, out = sendTo(small, msconsInterchange(msconsMessage("M6", day.Add(5*time.Hour), 4, "220"))); code != 200 {
		t.Errorf("an interchange within max_body_bytes: %d %v", code, out)
	}
	if n := countRows(t, s); n != "8" {
		t.Errorf("%s readings stored, want 8", n)
	}
}
