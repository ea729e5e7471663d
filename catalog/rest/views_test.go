package rest_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/view"
	"github.com/google/uuid"
	"github.com/meterstore/meterstore/catalog/catalogtest"
	"github.com/meterstore/meterstore/catalog/rest"
)

// echoViews offers, beside each table T, a view T_echo selecting it: a
// hook that knows nothing of readings.
type echoViews struct{}

func (echoViews) ViewsOf(name string) []string { return []string{name + "_echo"} }

func (echoViews) TableOf(ns, v string) (string, error) {
	name, ok := strings.CutSuffix(v, "_echo")
	if !ok {
		return "", fmt.Errorf("%w: %s.%s", icecatalog.ErrNoSuchView, ns, v)
	}
	return name, nil
}

func (echoViews) View(ident, tbl table.Identifier, md table.Metadata, _ string) (view.Metadata, error) {
	v, err := view.NewVersion(1, 0, []view.Representation{view.NewRepresentation("SELECT * FROM "+strings.Join(tbl, "."), "duckdb")}, ident[:1])
	if err != nil {
		return nil, err
	}
	return view.NewMetadataWithUUID(v, iceberg.NewSchema(0), md.Location(), nil, uuid.MustParse("00000000-0000-0000-0000-000000000001"))
}

// TestViewsHook: without WithViews the handler lists no views and finds
// none; with a hook it lists and serves the hook's views, and sets the
// default catalog of ViewCatalog on them.
func TestViewsHook(t *testing.T) {
	c := catalogtest.Backends()[1].Open(t)
	catalogtest.CreateTable(t, c, "power", nil)

	bare := httptest.NewServer(rest.Handler(c, nil))
	defer bare.Close()
	if a := restDo(t, bare.URL, "GET", "/v1/namespaces/metering/views", ""); a.code != 200 || fmt.Sprint(a.body["identifiers"]) != "[]" {
		t.Errorf("views without a hook: %d %s", a.code, a.raw)
	}
	if a := restDo(t, bare.URL, "GET", "/v1/namespaces/metering/views/power_echo", ""); a.code != 404 || a.errType() != "NoSuchViewException" {
		t.Errorf("a view without a hook: %d %s", a.code, a.raw)
	}

	hooked := httptest.NewServer(rest.Handler(c, nil, rest.WithViews(echoViews{}), rest.ViewCatalog("cat")))
	defer hooked.Close()
	if a := restDo(t, hooked.URL, "GET", "/v1/namespaces/metering/views", ""); a.code != 200 || !strings.Contains(string(a.raw), `"name":"power_echo"`) {
		t.Errorf("views with a hook: %d %s", a.code, a.raw)
	}
	a := restDo(t, hooked.URL, "GET", "/v1/namespaces/metering/views/power_echo", "")
	if a.code != 200 || !strings.Contains(string(a.raw), `SELECT * FROM metering.power`) || !strings.Contains(string(a.raw), `"default-catalog":"cat"`) {
		t.Errorf("the hook's view: %d %s", a.code, a.raw)
	}
	if loc, _ := a.body["metadata-location"].(string); !strings.Contains(loc, "/metadata/view-power_echo-") {
		t.Errorf("view location %q", loc)
	}
	if a := restDo(t, hooked.URL, "GET", "/v1/namespaces/metering/views/power", ""); a.code != 404 || a.errType() != "NoSuchViewException" {
		t.Errorf("a name the hook refuses: %d %s", a.code, a.raw)
	}
}
