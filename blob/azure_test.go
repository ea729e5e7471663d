package blob_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	azblobblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/meterstore/meterstore/blob"
	"github.com/meterstore/meterstore/blob/blobtest"
	"github.com/meterstore/meterstore/internal/azuretest"
)

// The Azure tests run against the Azurite emulator at
// MS_TEST_AZURE_ENDPOINT (start one with .ci/azurite.sh), reached through
// AZURE_STORAGE_CONNECTION_STRING as a user's program reaches it. Without
// MS_TEST_AZURE_ENDPOINT they fail when CI is set, so that a CI run cannot
// silently lose them, and are skipped otherwise.

func TestAzure(t *testing.T) {
	blobtest.Run(t, openAzure)
}

// TestAzureConditionalWrites checks, with the bare SDK, that the emulator
// refuses both kinds of write with If-None-Match: * over an existing blob
// (Put Blob, and Put Block List for blobs uploaded in blocks) with one of
// the codes the driver maps to ErrExists, and that the driver stores a
// large object in blocks, so that the suite's large-object races exercise
// Put Block List.
func TestAzureConditionalWrites(t *testing.T) {
	ctx := t.Context()
	client, name := azuretest.Client(t), azuretest.NewContainer(t)
	b := mustOpen(t, azuretest.URL(name))
	defer b.Close()
	if err := b.PutIfAbsent(ctx, "k", []byte("original")); err != nil {
		t.Fatal(err)
	}
	bb := client.ServiceClient().NewContainerClient(name).NewBlockBlobClient("k")
	ifNoneMatch := &azblobblob.AccessConditions{ModifiedAccessConditions: &azblobblob.ModifiedAccessConditions{IfNoneMatch: new(azcore.ETagAny)}}

	_, err := bb.Upload(ctx, streaming.NopCloser(strings.NewReader("put")), &blockblob.UploadOptions{AccessConditions: ifNoneMatch})
	wantRefused(t, "Put Blob", err)

	id := base64.StdEncoding.EncodeToString([]byte("block-0"))
	if _, err := bb.StageBlock(ctx, id, streaming.NopCloser(strings.NewReader("block")), nil); err != nil {
		t.Fatal(err)
	}
	_, err = bb.CommitBlockList(ctx, []string{id}, &blockblob.CommitBlockListOptions{AccessConditions: ifNoneMatch})
	wantRefused(t, "Put Block List", err)

	got, err := b.Get(ctx, "k")
	if err != nil || string(got) != "original" {
		t.Errorf("Get(k) = %.20q, %v; want the original", got, err)
	}

	// Without the precondition the same write replaces the blob: the
	// refusals above are the precondition's doing.
	if _, err := bb.Upload(ctx, streaming.NopCloser(strings.NewReader("replaced")), nil); err != nil {
		t.Fatalf("unconditional Put Blob: %v", err)
	}
	if got, err := b.Get(ctx, "k"); err != nil || string(got) != "replaced" {
		t.Errorf("Get(k) after an unconditional write = %.20q, %v", got, err)
	}

	// The driver uploads a large object in blocks.
	large := bytes.Repeat([]byte{1}, blobtest.LargeSize)
	if err := b.PutIfAbsent(ctx, "large", large); err != nil {
		t.Fatal(err)
	}
	list, err := client.ServiceClient().NewContainerClient(name).NewBlockBlobClient("large").GetBlockList(ctx, blockblob.BlockListTypeCommitted, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.CommittedBlocks) < 2 {
		t.Errorf("the large object has %d committed blocks; want it uploaded in blocks", len(list.CommittedBlocks))
	}
	if err := b.PutIfAbsent(ctx, "large", bytes.Repeat([]byte{2}, blobtest.LargeSize)); !errors.Is(err, blob.ErrExists) {
		t.Errorf("large PutIfAbsent over an existing key: %v; want ErrExists", err)
	}
	if got, err := b.Get(ctx, "large"); err != nil || !bytes.Equal(got, large) {
		t.Errorf("Get(large) after the refused write: %d bytes, %v; want the first", len(got), err)
	}
}

// wantRefused checks that err is the refusal of a write with If-None-Match:
// * over an existing blob. Azure's documentation names 412 ConditionNotMet
// for conditional writes in general, and the service (and Azurite) answer
// Put Blob and Put Block List with 409 BlobAlreadyExists; gocloud maps both
// to FailedPrecondition, which the driver maps to ErrExists.
func wantRefused(t *testing.T, op string, err error) {
	t.Helper()
	switch {
	case bloberror.HasCode(err, bloberror.BlobAlreadyExists):
		t.Logf("%s over an existing blob with If-None-Match: *: 409 BlobAlreadyExists", op)
	case bloberror.HasCode(err, bloberror.ConditionNotMet):
		t.Logf("%s over an existing blob with If-None-Match: *: 412 ConditionNotMet", op)
	default:
		t.Errorf("%s over an existing blob with If-None-Match: *: %v; want BlobAlreadyExists or ConditionNotMet", op, err)
	}
}

func openAzure(t *testing.T) *blob.Bucket {
	return mustOpen(t, azuretest.URL(azuretest.NewContainer(t)))
}
