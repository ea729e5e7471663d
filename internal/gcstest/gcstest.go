// Package gcstest gives tests buckets on the Google Cloud Storage emulator
// named by MS_TEST_GCS_ENDPOINT (start one with .ci/gcsserver.sh). The
// client library, and so the gs:// driver, finds the emulator as a user's
// program would, through STORAGE_EMULATOR_HOST, which must name the same
// server. Without MS_TEST_GCS_ENDPOINT a test that asks for a bucket fails
// when CI is set, so that a CI run cannot silently lose it, and is skipped
// otherwise.
package gcstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"
)

// Endpoint returns MS_TEST_GCS_ENDPOINT. If it is unset, it fails t when
// CI is set and skips t otherwise. It fails t if STORAGE_EMULATOR_HOST does
// not name the same host and port, for then the tests would talk to Google.
func Endpoint(t *testing.T) string {
	endpoint := os.Getenv("MS_TEST_GCS_ENDPOINT")
	if endpoint == "" {
		const msg = "MS_TEST_GCS_ENDPOINT is not set; start an emulator with: eval \"$(.ci/gcsserver.sh)\""
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatalf("MS_TEST_GCS_ENDPOINT: %v", err)
	}
	if host := os.Getenv("STORAGE_EMULATOR_HOST"); strings.TrimPrefix(host, "http://") != u.Host {
		t.Fatalf("STORAGE_EMULATOR_HOST=%q does not name the emulator at MS_TEST_GCS_ENDPOINT=%s", host, endpoint)
	}
	return endpoint
}

// URL returns the blob URL of bucket: a plain gs:// URL, as a user writes
// it; the environment points it at the emulator.
func URL(bucket string) string { return "gs://" + bucket }

// Client returns a client of the emulator.
func Client(t *testing.T) *storage.Client {
	Endpoint(t)
	client, err := storage.NewClient(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

var unsafeBucketChars = regexp.MustCompile(`[^a-z0-9]+`)

// NewBucket creates a bucket named after the test, and removes it with
// its objects when the test ends.
func NewBucket(t *testing.T) string {
	client := Client(t)
	suffix := make([]byte, 4)
	rand.Read(suffix)
	stem := unsafeBucketChars.ReplaceAllString(strings.ToLower(t.Name()), "-")
	name := strings.Trim(stem[max(0, len(stem)-45):], "-") + "-" + hex.EncodeToString(suffix)
	if err := client.Bucket(name).Create(t.Context(), "meterstore-test", nil); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := removeBucket(context.Background(), client.Bucket(name)); err != nil {
			t.Errorf("remove bucket %s: %v", name, err)
		}
	})
	return name
}

func removeBucket(ctx context.Context, b *storage.BucketHandle) error {
	it := b.Objects(ctx, nil)
	for {
		o, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		if err != nil {
			return err
		}
		if err := b.Object(o.Name).Delete(ctx); err != nil && !errors.Is(err, storage.ErrObjectNotExist) {
			return err
		}
	}
	return b.Delete(ctx)
}
