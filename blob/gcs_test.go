package blob_test

import (
	"bytes"
	"errors"
	"net/http"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"

	"github.com/meterstore/meterstore/blob"
	"github.com/meterstore/meterstore/blob/blobtest"
	"github.com/meterstore/meterstore/internal/gcstest"
)

// The GCS tests run against the emulator at MS_TEST_GCS_ENDPOINT (start
// one with .ci/gcsserver.sh), reached through STORAGE_EMULATOR_HOST as a
// user's program reaches it. Without MS_TEST_GCS_ENDPOINT they fail when CI
// is set, so that a CI run cannot silently lose them, and are skipped
// otherwise.

func TestGCS(t *testing.T) {
	blobtest.Run(t, openGCS)
}

// TestGCSConditionalWrites checks, with the bare client library, that the
// emulator refuses a write with the precondition ifGenerationMatch=0 over
// an existing object with 412 Precondition Failed, the code the driver maps
// to ErrExists, on both upload paths: a single-request upload and a
// resumable one, whose precondition is sent with the session's first
// request and must be applied when the last chunk completes the object.
func TestGCSConditionalWrites(t *testing.T) {
	ctx := t.Context()
	client, name := gcstest.Client(t), gcstest.NewBucket(t)
	b := mustOpen(t, gcstest.URL(name))
	defer b.Close()
	if err := b.PutIfAbsent(ctx, "k", []byte("original")); err != nil {
		t.Fatal(err)
	}
	obj := client.Bucket(name).Object("k").If(storage.Conditions{DoesNotExist: true})

	for _, tc := range []struct {
		upload string
		chunk  int
		size   int
	}{
		{"single-request", 0, 100},                 // ChunkSize 0: one request
		{"resumable", 256 << 10, 3*(256<<10) + 17}, // four chunks
	} {
		w := obj.NewWriter(ctx)
		w.ChunkSize = tc.chunk
		if _, err := w.Write(bytes.Repeat([]byte{'x'}, tc.size)); err != nil && !isPreconditionFailed(err) {
			t.Fatalf("%s upload: Write: %v", tc.upload, err)
		}
		if err := w.Close(); !isPreconditionFailed(err) {
			t.Errorf("%s upload over an existing object with ifGenerationMatch=0: %v; want 412", tc.upload, err)
		}
	}
	got, err := b.Get(ctx, "k")
	if err != nil || string(got) != "original" {
		t.Errorf("Get(k) = %.20q, %v; want the original", got, err)
	}

	// Without the precondition the same write replaces the object: the
	// refusals above are the precondition's doing.
	w := client.Bucket(name).Object("k").NewWriter(ctx)
	w.Write([]byte("replaced"))
	if err := w.Close(); err != nil {
		t.Fatalf("unconditional write: %v", err)
	}
	if got, err := b.Get(ctx, "k"); err != nil || string(got) != "replaced" {
		t.Errorf("Get(k) after an unconditional write = %.20q, %v", got, err)
	}

	// The driver's large objects go up in chunks (a resumable upload), so
	// the suite's large-object races exercise that path; a losing large
	// write leaves the object alone.
	large := bytes.Repeat([]byte{1}, blobtest.LargeSize)
	if err := b.PutIfAbsent(ctx, "large", large); err != nil {
		t.Fatal(err)
	}
	if err := b.PutIfAbsent(ctx, "large", bytes.Repeat([]byte{2}, blobtest.LargeSize)); !errors.Is(err, blob.ErrExists) {
		t.Errorf("large PutIfAbsent over an existing key: %v; want ErrExists", err)
	}
	if got, err := b.Get(ctx, "large"); err != nil || !bytes.Equal(got, large) {
		t.Errorf("Get(large) after the refused write: %d bytes, %v; want the first", len(got), err)
	}
}

func isPreconditionFailed(err error) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == http.StatusPreconditionFailed
}

func openGCS(t *testing.T) *blob.Bucket {
	return mustOpen(t, gcstest.URL(gcstest.NewBucket(t)))
}
