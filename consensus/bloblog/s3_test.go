package bloblog

import (
	"testing"

	"github.com/meterstore/meterstore/blob"
	"github.com/meterstore/meterstore/internal/s3test"
)

// allBuckets adds the S3-compatible test server to the local drivers.
func allBuckets(t *testing.T) map[string]func(t *testing.T) *blob.Bucket {
	m := buckets(t)
	m["s3"] = func(t *testing.T) *blob.Bucket { return openBucket(t, s3test.URL(t, s3test.NewBucket(t))) }
	return m
}
