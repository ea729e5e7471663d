package rest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/catalog/catalogtest"
	"github.com/meterstore/meterstore/catalog/rest"
	"github.com/meterstore/meterstore/internal/s3test"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestStorageCredentials: on an S3 warehouse, a loaded table's config
// and GET /v1/config's defaults hold the settings a reader needs; the
// credentials a request's context carries go into that request's
// LoadTableResult (storage-credentials, and the longest matching prefix's
// keys in config), never into /v1/config, and never show when formatted.
func TestStorageCredentials(t *testing.T) {
	bucket := s3test.NewBucket(t)
	wh, err := catalog.OpenWarehouse(t.Context(), s3test.URL(t, bucket))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Bucket.Close() })
	c := catalogtest.NewCatalog(t, wh, catalogtest.BlobLog(t, wh.Bucket))
	catalogtest.CreateTable(t, c, "power", nil)
	h := rest.Handler(c, nil)

	whole, err := wh.S3Credential(catalog.S3Keys{AccessKeyID: "WHOLE-ID", SecretAccessKey: "whole-s3cr3t"})
	if err != nil {
		t.Fatal(err)
	}
	if whole.Prefix != "s3://"+bucket+"/" {
		t.Errorf("prefix %q", whole.Prefix)
	}
	narrow := catalog.StorageCredential{Prefix: "s3://" + bucket + "/metering/power/",
		Config: map[string]string{"s3.access-key-id": "NARROW-ID", "s3.secret-access-key": "narrow-s3cr3t"}}
	other := catalog.StorageCredential{Prefix: "s3://" + bucket + "-other/",
		Config: map[string]string{"s3.access-key-id": "OTHER-ID", "s3.secret-access-key": "other-s3cr3t"}}

	get := func(path string, creds ...catalog.StorageCredential) (map[string]any, string) {
		t.Helper()
		r := httptest.NewRequest("GET", path, nil)
		if creds != nil {
			r = r.WithContext(catalog.WithStorageCredentials(r.Context(), creds...))
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var body map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
		}
		return body, w.Body.String()
	}
	const table = "/v1/namespaces/metering/tables/power"
	settings := map[string]string{"s3.endpoint": s3test.Endpoint(t), "s3.region": s3test.Region(), "client.region": s3test.Region(),
		"s3.path-style-access": "true", "s3.force-virtual-addressing": "false"}
	hasSettings := func(who string, cfg map[string]any) {
		for k, v := range settings {
			if cfg[k] != v {
				t.Errorf("%s: %s = %v; want %q", who, k, cfg[k], v)
			}
		}
	}

	body, raw := get(table)
	hasSettings("table, no credentials", body["config"].(map[string]any))
	if _, ok := body["storage-credentials"]; ok || strings.Contains(raw, "s3cr3t") {
		t.Errorf("table without credentials: %s", raw)
	}

	body, raw = get(table, whole, narrow, other)
	cfg := body["config"].(map[string]any)
	hasSettings("table, credentials", cfg)
	if cfg["s3.access-key-id"] != "NARROW-ID" || cfg["s3.secret-access-key"] != "narrow-s3cr3t" {
		t.Errorf("config has not the longest prefix's keys: %v", cfg)
	}
	var served struct {
		Creds []catalog.StorageCredential `json:"storage-credentials"`
	}
	json.Unmarshal([]byte(raw), &served)
	if fmt.Sprint(served.Creds) != fmt.Sprint([]catalog.StorageCredential{whole, narrow, other}) || len(served.Creds) != 3 ||
		served.Creds[0].Config["s3.secret-access-key"] != "whole-s3cr3t" {
		t.Errorf("storage-credentials %s", raw)
	}

	body, raw = get("/v1/config", whole)
	hasSettings("/v1/config", body["defaults"].(map[string]any))
	if strings.Contains(raw, "s3cr3t") || strings.Contains(raw, "WHOLE-ID") || strings.Contains(raw, "storage-credentials") {
		t.Errorf("/v1/config carries a credential: %s", raw)
	}

	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("vend", "cred", whole)
	if s := fmt.Sprintf("%v %+v %s", whole, whole, logged.String()); strings.Contains(s, "s3cr3t") || !strings.Contains(s, "s3.secret-access-key") {
		t.Errorf("formatted: %s", s)
	}

	if _, err := catalogtest.FileWarehouse(t).S3Credential(catalog.S3Keys{AccessKeyID: "a", SecretAccessKey: "b"}); err == nil {
		t.Error("S3Credential on a file warehouse")
	}
	if _, err := wh.S3Credential(catalog.S3Keys{AccessKeyID: "a"}); err == nil {
		t.Error("S3Credential without a secret")
	}
}
