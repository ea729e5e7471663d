package dashboard

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/store"
)

// TestPageShowsTokenTables: an admin token limited to some tables sees
// those alone on the page; an unlimited one sees every table.
func TestPageShowsTokenTables(t *testing.T) {
	dir := t.TempDir()
	src := fmt.Sprintf("[postgres]\nurl = %q\ndata_dir = %q\n[warehouse]\nurl = %q\n"+
		"[[table]]\nname = \"power\"\nresolutions = [\"PT15M\"]\n[[table]]\nname = \"gas\"\nresolutions = [\"PT1H\"]\n",
		pgtest.NewDB(t), dir, "file://"+filepath.Join(dir, "wh"))
	cfg, err := config.Parse([]byte(src), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.OpenConfig(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if err := s.EnsurePartitions(t.Context(), time.Now()); err != nil {
		t.Fatal(err)
	}
	admin, adminTok := tok("ops", config.ScopeAdmin)
	gasAdmin, gasTok := tok("gas-ops", config.ScopeAdmin)
	gasAdmin.Tables = []string{"gas"}
	d := New(s, Options{Tokens: []config.Token{admin, gasAdmin}})
	for _, tc := range []struct {
		bearer    string
		want, not []string
	}{
		{adminTok, []string{`data-table="power"`, `data-table="gas"`}, nil},
		{gasTok, []string{`data-table="gas"`}, []string{`data-table="power"`}},
	} {
		w := page(d, nil, tc.bearer)
		body := w.Body.String()
		if w.Code != 200 {
			t.Fatalf("%d %s", w.Code, body)
		}
		for _, s := range tc.want {
			if !strings.Contains(body, s) {
				t.Errorf("the page lacks %s", s)
			}
		}
		for _, s := range tc.not {
			if strings.Contains(body, s) {
				t.Errorf("the page of a token limited to gas shows %s", s)
			}
		}
	}
}
