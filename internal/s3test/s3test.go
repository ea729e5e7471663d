// Package s3test gives tests buckets on the S3-compatible server named by
// MS_TEST_S3_ENDPOINT (start one with .ci/s3server.sh), with credentials
// from the usual AWS environment. Without MS_TEST_S3_ENDPOINT a test that
// asks for one fails when CI is set, so that a CI run cannot silently lose
// it, and is skipped otherwise.
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// URL returns the blob URL of bucket on the test server.
func URL(t *testing.T, bucket string) string {
	q := url.Values{
		"endpoint":       {Endpoint(t)},
		"region":         {Region()},
		"use_path_style": {"true"},
	}
	return "s3://" + bucket + "?" + q.Encode()
}

// Endpoint returns MS_TEST_S3_ENDPOINT. If it is unset, it fails t when
// CI is set and skips t otherwise.
func Endpoint(t *testing.T) string {
	endpoint := os.Getenv("MS_TEST_S3_ENDPOINT")
	if endpoint == "" {
		const msg = "MS_TEST_S3_ENDPOINT is not set; start a server with: eval \"$(.ci/s3server.sh)\""
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return endpoint
}

// Region returns AWS_REGION, or us-east-1.
func Region() string {
	if r := os.Getenv("AWS_REGION"); r != "" {
		return r
	}
	return "us-east-1"
}

// Client returns an S3 client for the test server.
func Client(t *testing.T) *s3.Client {
	endpoint := Endpoint(t)
	cfg, err := config.LoadDefaultConfig(t.Context(), config.WithRegion(Region()))
	if err != nil {
		t.Fatal(err)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
	})
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
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := removeBucket(context.Background(), client, name); err != nil {
			t.Errorf("remove bucket %s: %v", name, err)
		}
	})
	return name
}

func removeBucket(ctx context.Context, client *s3.Client, name string) error {
	uploads, err := client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &name})
	if err != nil {
		return err
	}
	for _, u := range uploads.Uploads {
		if _, err := client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &name, Key: u.Key, UploadId: u.UploadId}); err != nil {
			return err
		}
	}
	pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: &name})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, o := range page.Contents {
			if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &name, Key: o.Key}); err != nil {
				return err
			}
		}
	}
	_, err = client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &name})
	return err
}
