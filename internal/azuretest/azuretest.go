// Package azuretest gives tests containers on the Azure Blob Storage
// emulator (Azurite) named by MS_TEST_AZURE_ENDPOINT (start one with
// .ci/azurite.sh). The azblob:// driver finds it as a user's program
// would, through AZURE_STORAGE_CONNECTION_STRING, whose BlobEndpoint must
// name the same server. Without MS_TEST_AZURE_ENDPOINT a test that asks
// for a container fails when CI is set, so that a CI run cannot silently
// lose it, and is skipped otherwise.
package azuretest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
)

// Endpoint returns MS_TEST_AZURE_ENDPOINT. If it is unset, it fails t when
// CI is set and skips t otherwise. It fails t unless the connection string
// names the same endpoint and no variable that gocloud prefers to it
// (an account key or a SAS token) is set, for then the tests would talk to
// Azure.
func Endpoint(t *testing.T) string {
	endpoint := os.Getenv("MS_TEST_AZURE_ENDPOINT")
	if endpoint == "" {
		const msg = "MS_TEST_AZURE_ENDPOINT is not set; start an emulator with: eval \"$(.ci/azurite.sh)\""
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cs := os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
	if !strings.Contains(cs+";", ";BlobEndpoint="+strings.TrimSuffix(endpoint, "/")+";") &&
		!strings.Contains(cs+";", ";BlobEndpoint="+strings.TrimSuffix(endpoint, "/")+"/;") {
		t.Fatalf("AZURE_STORAGE_CONNECTION_STRING does not name the emulator at MS_TEST_AZURE_ENDPOINT=%s", endpoint)
	}
	for _, v := range []string{"AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN"} {
		if os.Getenv(v) != "" {
			t.Fatalf("%s is set: gocloud would prefer it to the emulator's connection string", v)
		}
	}
	return endpoint
}

// URL returns the blob URL of container: a plain azblob:// URL, as a user
// writes it; the environment points it at the emulator.
func URL(container string) string { return "azblob://" + container }

// Client returns a client of the emulator's account.
func Client(t *testing.T) *azblob.Client {
	Endpoint(t)
	client, err := azblob.NewClientFromConnectionString(os.Getenv("AZURE_STORAGE_CONNECTION_STRING"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

var unsafeContainerChars = regexp.MustCompile(`[^a-z0-9]+`)

// NewContainer creates a container named after the test, and removes it
// with its blobs when the test ends.
func NewContainer(t *testing.T) string {
	client := Client(t)
	suffix := make([]byte, 4)
	rand.Read(suffix)
	// Container names: 3-63 lower-case letters, digits and single dashes,
	// starting with a letter or digit.
	stem := unsafeContainerChars.ReplaceAllString(strings.ToLower(t.Name()), "-")
	name := strings.Trim(stem[max(0, len(stem)-45):], "-") + "-" + hex.EncodeToString(suffix)
	if _, err := client.CreateContainer(t.Context(), name, nil); err != nil {
		t.Fatalf("create container %s: %v", name, err)
	}
	t.Cleanup(func() {
		// Deleting a container deletes its blobs.
		if _, err := client.DeleteContainer(context.Background(), name, nil); err != nil {
			t.Errorf("remove container %s: %v", name, err)
		}
	})
	return name
}
