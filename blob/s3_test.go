package blob_test

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/meterstore/meterstore/blob"
	"github.com/meterstore/meterstore/blob/blobtest"
	"github.com/meterstore/meterstore/internal/s3test"
)

// The S3 tests run against the S3-compatible server at MS_TEST_S3_ENDPOINT
// (start one with .ci/s3server.sh), with credentials from the usual AWS
// environment. Without MS_TEST_S3_ENDPOINT they fail when CI is set, so
// that a CI run cannot silently lose them, and are skipped otherwise.

func TestS3(t *testing.T) {
	blobtest.Run(t, openS3)
}

// TestS3ConditionalWrites checks, with the bare SDK, that the server
// refuses both kinds of conditional write over an existing key with 412
// PreconditionFailed, the code the driver maps to ErrExists, and that the
// driver stores a large object by multipart upload, so that the suite's
// large-object tests exercise CompleteMultipartUpload.
func TestS3ConditionalWrites(t *testing.T) {
	ctx := t.Context()
	client, name := s3test.Client(t), s3test.NewBucket(t)
	b := mustOpen(t, s3test.URL(t, name))
	defer b.Close()
	if err := b.PutIfAbsent(ctx, "k", []byte("original")); err != nil {
		t.Fatal(err)
	}

	_, err := client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &name, Key: aws.String("k"), Body: strings.NewReader("put"),
		IfNoneMatch: aws.String("*"),
	})
	wantCode(t, "PutObject", err, "PreconditionFailed")

	mpu, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &name, Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	part, err := client.UploadPart(ctx, &s3.UploadPartInput{
		Bucket: &name, Key: aws.String("k"), UploadId: mpu.UploadId,
		PartNumber: aws.Int32(1), Body: strings.NewReader("multipart"),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &name, Key: aws.String("k"), UploadId: mpu.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{ETag: part.ETag, PartNumber: aws.Int32(1)}}},
		IfNoneMatch:     aws.String("*"),
	})
	wantCode(t, "CompleteMultipartUpload", err, "PreconditionFailed")
	if _, err := client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &name, Key: aws.String("k"), UploadId: mpu.UploadId}); err != nil {
		t.Logf("AbortMultipartUpload after the refused completion: %v", err)
	}
	got, err := b.Get(ctx, "k")
	if err != nil || string(got) != "original" {
		t.Errorf("Get(k) = %.20q, %v; want the original", got, err)
	}

	// The ETag of an object assembled from parts ends in "-<parts>".
	if err := b.PutIfAbsent(ctx, "large", make([]byte, blobtest.LargeSize)); err != nil {
		t.Fatal(err)
	}
	head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &name, Key: aws.String("large")})
	if err != nil {
		t.Fatal(err)
	}
	if etag := aws.ToString(head.ETag); !regexp.MustCompile(`-[0-9]+"?$`).MatchString(etag) {
		t.Errorf("ETag of the large object = %s; want a multipart ETag", etag)
	}
	// A refused multipart write leaves no upload behind.
	if err := b.PutIfAbsent(ctx, "large", bytes.Repeat([]byte{1}, blobtest.LargeSize)); !errors.Is(err, blob.ErrExists) {
		t.Errorf("large PutIfAbsent over an existing key: %v; want ErrExists", err)
	}
	uploads, err := client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &name})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range uploads.Uploads {
		if aws.ToString(u.Key) == "large" {
			t.Errorf("multipart upload %s of the losing write is left behind", aws.ToString(u.UploadId))
		}
	}
}

func wantCode(t *testing.T, op string, err error, code string) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != code {
		t.Errorf("%s over an existing key with If-None-Match: *: %v; want %s", op, err, code)
	}
}

func openS3(t *testing.T) *blob.Bucket {
	return mustOpen(t, s3test.URL(t, s3test.NewBucket(t)))
}
