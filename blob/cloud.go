package blob

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"cloud.google.com/go/storage"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	gcblob "gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// conflictRetries bounds the retries of a conditional write that S3
// refused with 409 ConditionalRequestConflict, which means that another
// conditional write of the key was in flight, not that the key exists.
const conflictRetries = 6

// cloud adapts a gocloud.dev bucket (S3, GCS, Azure, memory).
type cloud struct {
	b *gcblob.Bucket
}

func (c *cloud) get(ctx context.Context, key string) ([]byte, error) {
	r, err := c.b.NewReader(ctx, key, &gcblob.ReaderOptions{BeforeRead: quietChecksums})
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var buf bytes.Buffer
	buf.Grow(int(r.Size()) + bytes.MinRead) // ReadFrom wants room to see EOF
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// quietChecksums keeps the S3 SDK from logging, on every read of an object
// uploaded in parts, that it skipped checksum validation: S3 offers no
// whole-object checksum to validate such an object against, and a library
// has no business writing to stderr.
func quietChecksums(as func(any) bool) error {
	var opts *[]func(*s3.Options)
	if as(&opts) {
		*opts = append(*opts, func(o *s3.Options) { o.DisableLogOutputChecksumValidationSkipped = true })
	}
	return nil
}

// put overwrites; object stores replace an object atomically.
func (c *cloud) put(ctx context.Context, key string, data []byte) error {
	return c.b.Upload(ctx, key, bytes.NewReader(data), &gcblob.WriterOptions{ContentType: "application/octet-stream"})
}

// putIfAbsent relies on the store's conditional write, which gocloud's
// drivers send for IfNotExist: If-None-Match: * on S3 (PutObject, and
// CompleteMultipartUpload for large objects) and on Azure (Put Blob, and
// Put Block List for large objects), ifGenerationMatch=0 on GCS
// (single-request and resumable uploads alike). The drivers map each
// store's refusal to FailedPrecondition: 412 on S3 and GCS; on Azure 409
// BlobAlreadyExists, which Azurite answers, as well as 412 ConditionNotMet.
func (c *cloud) putIfAbsent(ctx context.Context, key string, data []byte) error {
	opts := &gcblob.WriterOptions{
		ContentType: "application/octet-stream",
		IfNotExist:  true,
	}
	backoff := 20 * time.Millisecond
	for attempt := 0; ; attempt++ {
		// A bytes.Reader, unlike the pipe behind Writer.Write, lets the SDK
		// learn the size and rewind the body to retry a request.
		err := c.b.Upload(ctx, key, bytes.NewReader(data), opts)
		switch {
		case err == nil:
			return nil
		case gcerrors.Code(err) == gcerrors.FailedPrecondition:
			return ErrExists
		case !isConditionalConflict(err) || attempt == conflictRetries:
			return err
		}
		// Full jitter keeps retrying rivals from colliding again.
		t := time.NewTimer(rand.N(backoff) + time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff *= 2
	}
}

func isConditionalConflict(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ConditionalRequestConflict"
}

// list asks S3 and GCS to start after startAfter, and filters for every
// store, since memory and Azure cannot be asked.
func (c *cloud) list(ctx context.Context, prefix, startAfter string, n int) ([]Object, error) {
	opts := &gcblob.ListOptions{Prefix: prefix}
	if startAfter != "" {
		opts.BeforeList = func(as func(any) bool) error {
			var in *s3.ListObjectsV2Input
			if as(&in) {
				in.StartAfter = aws.String(startAfter)
			}
			var q *storage.Query
			if as(&q) {
				q.StartOffset = startAfter // inclusive; the filter drops it
			}
			return nil
		}
	}
	var objs []Object
	token := gcblob.FirstPageToken
	for len(objs) < n && len(token) > 0 {
		page, next, err := c.b.ListPage(ctx, token, n-len(objs), opts)
		if err != nil {
			return nil, err
		}
		for _, o := range page {
			if o.Key > startAfter && len(objs) < n {
				objs = append(objs, Object{Key: o.Key, Size: o.Size})
			}
		}
		token = next
	}
	return objs, nil
}

func (c *cloud) delete(ctx context.Context, key string) error {
	err := c.b.Delete(ctx, key)
	if gcerrors.Code(err) == gcerrors.NotFound {
		return nil
	}
	return err
}

func (c *cloud) close() error { return c.b.Close() }
