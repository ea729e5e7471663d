package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	icerest "github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/blob"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/catalog/catalogtest"
	"github.com/meterstore/meterstore/catalog/rest"
	"github.com/meterstore/meterstore/consensus"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// errBackwards is what checkW refuses with.
var errBackwards = errors.New("w would move backwards")

// checkW is a commit check in the manner of the cold tier's watermark
// check: the summary value "w" of the current snapshot never decreases.
func checkW(_ table.Identifier, base, next table.Metadata) error {
	if base == nil {
		return nil
	}
	w := func(md table.Metadata) string {
		if s := md.CurrentSnapshot(); s != nil && s.Summary != nil {
			return s.Summary.Properties["w"]
		}
		return ""
	}
	if b, n := w(base), w(next); n < b {
		return fmt.Errorf("%w: from %q to %q", errBackwards, b, n)
	}
	return nil
}

// checkedCatalog opens a catalog with checkW and no namespace yet.
func checkedCatalog(t *testing.T, wh catalog.Warehouse, l consensus.Log) *catalog.Catalog {
	t.Helper()
	c, err := catalog.New(catalog.Options{Warehouse: wh, Log: l, Check: checkW})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// restClient is iceberg-go's own REST catalog client pointed at h, served
// on 127.0.0.1.
func restClient(t *testing.T, h http.Handler) (*icerest.Catalog, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	rc, err := icerest.NewCatalog(t.Context(), "rest", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	return rc, srv
}

func monthSpec() iceberg.PartitionSpec {
	return iceberg.NewPartitionSpec(iceberg.PartitionField{
		SourceIDs: []int{2}, FieldID: 1000, Name: "from_month", Transform: iceberg.MonthTransform{},
	})
}

// TestRESTWritable drives the writable handler with iceberg-go's REST
// client: every write lands in the log exactly as an in-process one would,
// conflicts and refusals reach the client as iceberg-go's commit-failed
// error, and nothing of a failed commit lands.
func TestRESTWritable(t *testing.T) {
	for _, be := range []struct {
		name string
		log  func(t *testing.T, wh catalog.Warehouse) consensus.Log
	}{
		{"postgres", func(t *testing.T, _ catalog.Warehouse) consensus.Log { return catalogtest.PGLog(t) }},
		{"serverless", func(t *testing.T, wh catalog.Warehouse) consensus.Log { return catalogtest.BlobLog(t, wh.Bucket) }},
	} {
		t.Run(be.name, func(t *testing.T) {
			ctx := t.Context()
			wh := catalogtest.FileWarehouse(t)
			c := checkedCatalog(t, wh, be.log(t, wh))
			rc, _ := restClient(t, rest.WritableHandler(c, nil))
			ns := table.Identifier{"archive"}
			ident := table.Identifier{"archive", "power"}

			// Namespaces.
			if err := rc.CreateNamespace(ctx, ns, iceberg.Properties{"owner": "rest", "tier": "cold"}); err != nil {
				t.Fatal(err)
			}
			sum, err := rc.UpdateNamespaceProperties(ctx, ns, []string{"owner", "nope"}, iceberg.Properties{"retention": "10y"})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sum.Removed, []string{"owner"}) || !slices.Equal(sum.Missing, []string{"nope"}) || !slices.Equal(sum.Updated, []string{"retention"}) {
				t.Fatalf("properties summary %+v", sum)
			}
			props, err := c.LoadNamespaceProperties(ctx, ns) // in-process: the registry has it
			if err != nil || len(props) != 2 || props["tier"] != "cold" || props["retention"] != "10y" {
				t.Fatalf("namespace properties in the catalog: %v, %v", props, err)
			}

			// Create.
			spec := monthSpec()
			tbl, err := rc.CreateTable(ctx, ident, catalogtest.Schema, icecatalog.WithPartitionSpec(&spec),
				icecatalog.WithProperties(iceberg.Properties{"owner": "rest"}))
			if err != nil {
				t.Fatal(err)
			}
			local, err := c.LoadTable(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			if local.MetadataLocation() != tbl.MetadataLocation() || local.Metadata().Version() != 2 ||
				localSpec(local).NumFields() != 1 || localSpec(local).Field(0).Transform.String() != "month" || local.Properties()["owner"] != "rest" {
				t.Fatalf("created through REST: %s v%d spec %v props %v", local.MetadataLocation(), local.Metadata().Version(), local.Spec(), local.Properties())
			}

			// Commit; a load after it sees the new snapshot, through REST
			// and in process.
			tbl, err = catalogtest.AppendRows(t, tbl, "a", 10, iceberg.Properties{"w": "2"})
			if err != nil {
				t.Fatal(err)
			}
			loaded, err := rc.LoadTable(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			if s := loaded.CurrentSnapshot(); s == nil || s.SnapshotID != tbl.CurrentSnapshot().SnapshotID || s.Summary.Properties["w"] != "2" {
				t.Fatalf("load after commit: snapshot %v, want %d with w=2", s, tbl.CurrentSnapshot().SnapshotID)
			}
			if got := catalogtest.Writers(t, loaded); len(got) != 10 {
				t.Fatalf("scanned %d rows through REST, want 10", len(got))
			}
			if local, _ = c.LoadTable(ctx, ident); local.MetadataLocation() != loaded.MetadataLocation() {
				t.Fatalf("the catalog is at %s, REST served %s", local.MetadataLocation(), loaded.MetadataLocation())
			}

			// Two transactions from one snapshot: the second loses.
			a, b := loaded.NewTransaction(), loaded.NewTransaction()
			for _, x := range []struct {
				tx *table.Transaction
				w  string
			}{{a, "x"}, {b, "y"}} {
				at := catalogtest.Rows(t, x.w, time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC), 5)
				if err := x.tx.AppendTable(ctx, at, 5, iceberg.Properties{"w": "3"}); err != nil {
					t.Fatal(err)
				}
				at.Release()
			}
			if _, err := a.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			histBefore, metaBefore := history(t, c, ident), metadataFilesOf(t, c, "archive/power")
			_, err = b.Commit(ctx)
			if !errors.Is(err, table.ErrCommitFailed) || !errors.Is(err, icerest.ErrCommitFailed) {
				t.Fatalf("conflicting commit: %v, want iceberg-go's ErrCommitFailed", err)
			}
			assertUnchanged(t, c, ident, histBefore, metaBefore)

			// A commit the CommitCheck refuses: the client sees a commit
			// failure, and nothing lands.
			cur, err := rc.LoadTable(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			_, err = catalogtest.AppendRows(t, cur, "back", 3, iceberg.Properties{"w": "1"})
			if !errors.Is(err, table.ErrCommitFailed) || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), errBackwards.Error()) {
				t.Fatalf("commit moving w back: %v, want a commit failure naming the refusal", err)
			}
			assertUnchanged(t, c, ident, histBefore, metaBefore)
			if got := catalogtest.Writers(t, cur); len(got) != 15 || slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "y-") || strings.HasPrefix(s, "back-") }) {
				t.Fatalf("table holds %v", got)
			}
			// A metadata-only commit through REST (iceberg-go's UpdateTable path).
			tx := cur.NewTransaction()
			if err := tx.SetProperties(iceberg.Properties{"note": "via rest"}); err != nil {
				t.Fatal(err)
			}
			if cur, err = tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if local, _ = c.LoadTable(ctx, ident); local.Properties()["note"] != "via rest" || len(history(t, c, ident)) != len(histBefore)+1 {
				t.Fatalf("property commit: %v", local.Properties())
			}

			// Drop: purge is refused and changes nothing; rename is not
			// offered. (What every catalog does, a second create, a
			// namespace with a table, a load after the drop, is
			// TestConformance's.)
			if err := rc.PurgeTable(ctx, ident); !errors.Is(err, iceberg.ErrNotImplemented) {
				t.Fatalf("purge: %v, want not implemented", err)
			}
			if ok, _ := c.CheckTableExists(ctx, ident); !ok {
				t.Fatal("a refused purge dropped the table")
			}
			if _, err := rc.RenameTable(ctx, ident, table.Identifier{"archive", "gas"}); !errors.Is(err, icerest.ErrEndpointNotSupported) {
				t.Fatalf("rename: %v", err)
			}
			if err := rc.DropTable(ctx, ident); err != nil {
				t.Fatal(err)
			}
			if h := history(t, c, ident); !h[len(h)-1].Dropped {
				t.Fatalf("the log does not end with the drop: %+v", h)
			}
			if err := rc.DropNamespace(ctx, ns); err != nil {
				t.Fatal(err)
			}
			if ok, err := c.CheckNamespaceExists(ctx, ns); ok || err != nil {
				t.Fatalf("namespace after drop: %v %v", ok, err)
			}
		})
	}
}

func history(t *testing.T, c *catalog.Catalog, ident table.Identifier) []catalog.Commit {
	t.Helper()
	h, err := c.History(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func metadataFilesOf(t *testing.T, c *catalog.Catalog, dir string) []string {
	t.Helper()
	var out []string
	for _, k := range listKeys(t, c, dir+"/metadata/") {
		if strings.HasSuffix(k, ".metadata.json") {
			out = append(out, k)
		}
	}
	return out
}

func listKeys(t *testing.T, c *catalog.Catalog, prefix string) []string {
	t.Helper()
	page, err := c.Warehouse().Bucket.List(t.Context(), prefix, blob.ListOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range page.Objects {
		out = append(out, o.Key)
	}
	return out
}

// assertUnchanged checks that a failed commit left neither a log entry nor
// a metadata file.
func assertUnchanged(t *testing.T, c *catalog.Catalog, ident table.Identifier, hist []catalog.Commit, meta []string) {
	t.Helper()
	if after := history(t, c, ident); len(after) != len(hist) || after[len(after)-1].MetadataLocation != hist[len(hist)-1].MetadataLocation {
		t.Fatalf("a failed commit reached the log: %d commits, before %d", len(after), len(hist))
	}
	if after := metadataFilesOf(t, c, strings.Join(ident, "/")); !slices.Equal(after, meta) {
		t.Fatalf("a failed commit left metadata files: %v, before %v", after, meta)
	}
}

// unsettledLog fails the next n CompareAndSets with an error whose outcome
// is unknown, writing nothing, as a connection lost mid-statement does.
type unsettledLog struct {
	consensus.Log
	n *atomic.Int32
}

func (u unsettledLog) CompareAndSet(ctx context.Context, shard string, expected int64, data []byte) (consensus.Result, error) {
	if u.n.Add(-1) >= 0 {
		return 0, fmt.Errorf("injected: connection lost: %w", consensus.ErrIndeterminate)
	}
	return u.Log.CompareAndSet(ctx, shard, expected, data)
}

// TestRESTCommitStateUnknown: a commit whose outcome the log cannot settle
// reaches the client as iceberg-go's commit-state-unknown error, never as
// a clean commit failure that would invite deleting its files.
func TestRESTCommitStateUnknown(t *testing.T) {
	wh := catalogtest.FileWarehouse(t)
	n := new(atomic.Int32)
	c := catalogtest.NewCatalog(t, wh, unsettledLog{catalogtest.BlobLog(t, wh.Bucket), n})
	catalogtest.CreateTable(t, c, "power", nil)
	rc, _ := restClient(t, rest.WritableHandler(c, nil))
	ident := table.Identifier{"metering", "power"}
	remote, err := rc.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	n.Store(1)
	_, err = catalogtest.AppendRows(t, remote, "x", 4, nil)
	if !errors.Is(err, icerest.ErrCommitStateUnknown) || errors.Is(err, table.ErrCommitFailed) || !strings.Contains(err.Error(), "CommitStateUnknownException") {
		t.Fatalf("unsettled commit: %v, want ErrCommitStateUnknown and not ErrCommitFailed", err)
	}
	// The next commit goes through.
	if _, err := catalogtest.AppendRows(t, remote, "y", 4, nil); err != nil {
		t.Fatal(err)
	}
	cur, _ := c.LoadTable(t.Context(), ident)
	if got := catalogtest.Writers(t, cur); len(got) != 4 || !strings.HasPrefix(got[0], "y-") {
		t.Fatalf("table holds %v", got)
	}
}

// TestRESTConcurrentAppenders: writers append through REST at once;
// iceberg-go refreshes and replays on each 409. No append is lost, none is
// duplicated.
func TestRESTConcurrentAppenders(t *testing.T) {
	c := catalogtest.Backends()[1].Open(t)
	var conflicts atomic.Int32
	h := rest.WritableHandler(c, nil)
	rc, _ := restClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		if sw.code == http.StatusConflict {
			conflicts.Add(1)
		}
	}))
	spec := monthSpec()
	ident := table.Identifier{"metering", "power"}
	if _, err := rc.CreateTable(t.Context(), ident, catalogtest.Schema, icecatalog.WithPartitionSpec(&spec),
		icecatalog.WithProperties(iceberg.Properties{
			table.CommitNumRetriesKey:     "100",
			table.CommitMinRetryWaitMsKey: "1",
			table.CommitMaxRetryWaitMsKey: "50",
		})); err != nil {
		t.Fatal(err)
	}
	const writersN, appends, per = 4, 3, 2
	var (
		wg   sync.WaitGroup
		want []string
	)
	errs := make(chan error, writersN*appends)
	for w := range writersN {
		for a := range appends {
			for i := range per {
				want = append(want, fmt.Sprintf("w%d.%d-%d", w, a, i))
			}
		}
		wg.Go(func() {
			for a := range appends {
				tbl, err := rc.LoadTable(context.Background(), ident)
				if err == nil {
					_, err = catalogtest.AppendRows(t, tbl, fmt.Sprintf("w%d.%d", w, a), per, nil)
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d append %d: %w", w, a, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	slices.Sort(want)
	cur, err := c.LoadTable(t.Context(), ident)
	if err != nil {
		t.Fatal(err)
	}
	if got := catalogtest.Writers(t, cur); !slices.Equal(got, want) {
		t.Fatalf("got %d rows, want %d: appends lost or duplicated", len(got), len(want))
	}
	if h := history(t, c, ident); len(h) != 1+writersN*appends {
		t.Fatalf("%d commits in the log, want %d", len(h), 1+writersN*appends)
	}
	t.Logf("%d commits answered 409 and were replayed", conflicts.Load())
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// TestRESTWritableProtocol checks the answers a client library would not
// provoke: refusals, bad bodies and the endpoint negotiation.
func TestRESTWritableProtocol(t *testing.T) {
	c := catalogtest.Backends()[1].Open(t)
	catalogtest.CreateTable(t, c, "power", nil)
	_, srv := restClient(t, rest.WritableHandler(c, map[string]string{"x": "y"}))
	ro := httptest.NewServer(rest.Handler(c, nil))
	defer ro.Close()
	do := func(base, method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if len(bytes.TrimSpace(data)) > 0 {
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatalf("%s %s: %v: %s", method, path, err, data)
			}
		}
		return resp.StatusCode, m
	}
	errType := func(m map[string]any) string {
		e, _ := m["error"].(map[string]any)
		s, _ := e["type"].(string)
		return s
	}
	schema, _ := json.Marshal(catalogtest.Schema)
	root := c.Warehouse().Root
	for _, tc := range []struct {
		method, path, body string
		code               int
		typ                string
	}{
		{"POST", "/v1/namespaces/metering/tables", `{"name":"gas","schema":` + string(schema) + `,"stage-create":true}`, 501, "NotImplementedException"},
		{"POST", "/v1/namespaces/metering/tables", `{"name":"gas"}`, 400, "BadRequestException"},
		{"POST", "/v1/namespaces/metering/tables", `{"name":"gas","schema":`, 400, "BadRequestException"},
		{"POST", "/v1/namespaces/metering/tables", `{"name":"bad.name","schema":` + string(schema) + `}`, 400, "BadRequestException"},
		{"POST", "/v1/namespaces/metering/tables", `{"name":"gas","location":"file:///elsewhere/gas","schema":` + string(schema) + `}`, 400, "BadRequestException"},
		{"POST", "/v1/namespaces/nope/tables", `{"name":"gas","schema":` + string(schema) + `}`, 404, "NoSuchNamespaceException"},
		{"POST", "/v1/namespaces/metering/tables", `{"name":"power","schema":` + string(schema) + `}`, 409, "AlreadyExistsException"},
		{"POST", "/v1/namespaces/metering/tables/gas", `{"requirements":[],"updates":[]}`, 404, "NoSuchTableException"},
		{"POST", "/v1/namespaces/metering/tables/power", `{"identifier":{"namespace":["metering"],"name":"gas"},"updates":[]}`, 400, "BadRequestException"},
		{"POST", "/v1/namespaces/metering/tables/power", `{"updates":[{"action":"no-such-update"}]}`, 400, "BadRequestException"},
		{"POST", "/v1/namespaces/metering/tables/power", `{"requirements":[{"type":"assert-table-uuid","uuid":"00000000-0000-0000-0000-000000000001"}],"updates":[]}`, 409, "CommitFailedException"},
		{"POST", "/v1/namespaces/metering/tables/power", `{"updates":[{"action":"set-current-schema","schema-id":42}]}`, 400, "BadRequestException"},
		// A new location the catalog cannot write is refused, 400, never
		// 500: a client takes a 5xx on a commit for an unknown outcome.
		{"POST", "/v1/namespaces/metering/tables/power", `{"updates":[{"action":"set-location","location":"file:///elsewhere/power"}]}`, 400, "BadRequestException"},
		{"POST", "/v1/namespaces/metering/tables/power", `{"updates":[{"action":"set-location","location":"s3://bucket/power"}]}`, 400, "BadRequestException"},
		{"POST", "/v1/namespaces/metering/tables/power", `{"updates":[{"action":"set-location","location":"` + root + `/metering/../../escape"}]}`, 400, "BadRequestException"},
		{"POST", "/v1/namespaces/metering/tables/power", `{"updates":[{"action":"set-location","location":"` + root + `/metering/power/"}]}`, 400, "BadRequestException"},
		{"POST", "/v1/namespaces/metering/tables/power", `{"updates":[{"action":"set-location","location":"` + root + `/metering/p\u001bower"}]}`, 400, "BadRequestException"},
		{"POST", "/v1/namespaces/metering/tables/power", `{"requirements":[{"type":"assert-current-schema-id","current-schema-id":42}],"updates":[]}`, 409, "CommitFailedException"},
		{"POST", "/v1/namespaces/metering/properties", `{"removals":["a"],"updates":{"a":"b"}}`, 422, "UnprocessableEntityException"},
		{"POST", "/v1/namespaces/nope/properties", `{"updates":{"a":"b"}}`, 404, "NoSuchNamespaceException"},
		{"POST", "/v1/namespaces", `{"namespace":["metering"]}`, 409, "AlreadyExistsException"},
		{"POST", "/v1/namespaces", `{"namespace":["a","b"]}`, 400, "BadRequestException"},
		{"DELETE", "/v1/namespaces/nope", ``, 404, "NoSuchNamespaceException"},
		{"DELETE", "/v1/namespaces/metering", ``, 409, "NamespaceNotEmptyException"},
		{"DELETE", "/v1/namespaces/metering/tables/gas", ``, 404, "NoSuchTableException"},
		{"DELETE", "/v1/namespaces/metering/tables/power?purgeRequested=true", ``, 501, "NotImplementedException"},
		{"POST", "/v1/tables/rename", `{"source":{"namespace":["metering"],"name":"power"},"destination":{"namespace":["metering"],"name":"gas"}}`, 501, "NotImplementedException"},
		{"POST", "/v1/transactions/commit", `{"table-changes":[]}`, 501, "NotImplementedException"},
		{"POST", "/v1/namespaces/metering/register", `{"name":"gas","metadata-location":"x"}`, 501, "NotImplementedException"},
		{"POST", "/v1/namespaces/metering/tables/power/metrics", `{}`, 501, "NotImplementedException"},
		{"PUT", "/v1/namespaces/metering/tables/power", `{}`, 405, "MethodNotAllowedException"},
		{"POST", "/v1/config", `{}`, 405, "MethodNotAllowedException"},
	} {
		code, body := do(srv.URL, tc.method, tc.path, tc.body)
		if code != tc.code || errType(body) != tc.typ {
			t.Errorf("%s %s %.60s: %d %v, want %d %s", tc.method, tc.path, tc.body, code, body, tc.code, tc.typ)
		}
	}
	if ok, _ := c.CheckTableExists(t.Context(), table.Identifier{"metering", "power"}); !ok {
		t.Fatal("the table is gone after the refused requests")
	}
	if h, _ := c.History(t.Context(), table.Identifier{"metering", "power"}); len(h) != 1 {
		t.Fatalf("the refused requests reached the log: %+v", h)
	}
	if ok, _ := c.CheckTableExists(t.Context(), table.Identifier{"metering", "gas"}); ok {
		t.Fatal("a refused create made a table")
	}

	// The configuration advertises writes only when they are served.
	endpoints := func(base string) []string {
		_, cfg := do(base, "GET", "/v1/config", "")
		var out []string
		for _, e := range cfg["endpoints"].([]any) {
			out = append(out, e.(string))
		}
		return out
	}
	if rw := endpoints(srv.URL); !slices.Contains(rw, "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}") {
		t.Errorf("writable endpoints %v lack the commit", rw)
	}
	if r := endpoints(ro.URL); slices.ContainsFunc(r, func(e string) bool { return !strings.HasPrefix(e, "GET ") && !strings.HasPrefix(e, "HEAD ") }) {
		t.Errorf("read-only endpoints %v advertise a write", r)
	}
	// iceberg-go's client reads through the read-only handler and does not
	// try to write through it.
	rc, _ := restClient(t, rest.Handler(c, nil))
	if _, err := rc.LoadTable(t.Context(), table.Identifier{"metering", "power"}); err != nil {
		t.Fatal(err)
	}
	if err := rc.CreateNamespace(t.Context(), table.Identifier{"other"}, nil); !errors.Is(err, icerest.ErrEndpointNotSupported) {
		t.Fatalf("create namespace through the read-only handler: %v", err)
	}
	if code, body := do(ro.URL, "POST", "/v1/namespaces", `{"namespace":["other"]}`); code != 405 || errType(body) != "MethodNotAllowedException" {
		t.Fatalf("POST through the read-only handler: %d %v", code, body)
	}
}

func localSpec(t *table.Table) *iceberg.PartitionSpec {
	s := t.Spec()
	return &s
}
