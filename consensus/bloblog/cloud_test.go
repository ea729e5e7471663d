package bloblog

import (
	"testing"

	"github.com/meterstore/meterstore/blob"
	"github.com/meterstore/meterstore/internal/azuretest"
	"github.com/meterstore/meterstore/internal/gcstest"
	"github.com/meterstore/meterstore/internal/s3test"
)

// allBuckets adds the object stores' test servers to the local drivers:
// the S3-compatible server, the GCS emulator and Azurite. Each is opened by
// its URL, as a user opens it; without its server a test fails in CI and
// is skipped elsewhere (see the test packages).
func allBuckets(t *testing.T) map[string]func(t *testing.T) *blob.Bucket {
	m := buckets(t)
	m["s3"] = func(t *testing.T) *blob.Bucket { return openBucket(t, s3test.URL(t, s3test.NewBucket(t))) }
	m["gcs"] = func(t *testing.T) *blob.Bucket { return openBucket(t, gcstest.URL(gcstest.NewBucket(t))) }
	m["azure"] = func(t *testing.T) *blob.Bucket { return openBucket(t, azuretest.URL(azuretest.NewContainer(t))) }
	return m
}
