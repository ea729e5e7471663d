package catalog

// Vended storage credentials: the REST protocol lets a catalog hand a
// reader the credentials for a table's files in its LoadTableResult
// ("storage-credentials", a list of {prefix, config}, and "config"). The
// handler never decides who gets them: whoever authenticates the request
// attaches them to its context with WithStorageCredentials, and only a
// LoadTableResult answered to that request carries them. GET /v1/config
// never does, whatever the context holds.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
)

// S3Keys is a long-lived S3 access key pair.
type S3Keys struct {
	AccessKeyID     string
	SecretAccessKey string
}

// A StorageCredential is one entry of the REST protocol's
// storage-credentials: the file IO properties a client uses for the files
// whose locations start with Prefix.
type StorageCredential struct {
	Prefix string            `json:"prefix"`
	Config map[string]string `json:"config"`
}

// String shows the prefix and the properties' names, never their values,
// so that a credential formatted into a message or a log reveals nothing.
func (c StorageCredential) String() string {
	return fmt.Sprintf("storage credential for %s (%s)", c.Prefix, strings.Join(slices.Sorted(maps.Keys(c.Config)), ", "))
}

// LogValue is String, for log/slog.
func (c StorageCredential) LogValue() slog.Value { return slog.StringValue(c.String()) }

// S3Credential returns the storage credential that hands keys to clients
// for every file of the warehouse, which must be on S3.
func (w Warehouse) S3Credential(keys S3Keys) (StorageCredential, error) {
	if !strings.HasPrefix(w.Root, "s3://") {
		return StorageCredential{}, fmt.Errorf("catalog: warehouse %q is not on S3: there are no S3 keys to vend for it", w.Root)
	}
	if keys.AccessKeyID == "" || keys.SecretAccessKey == "" {
		return StorageCredential{}, errors.New("catalog: an S3 credential needs an access key id and a secret access key")
	}
	return StorageCredential{
		// The slash keeps the credential off a bucket whose name merely
		// starts with this one's.
		Prefix: w.Root + "/",
		Config: map[string]string{
			icebergio.S3AccessKeyID:     keys.AccessKeyID,
			icebergio.S3SecretAccessKey: keys.SecretAccessKey,
		},
	}, nil
}

// storageCredentialsKey is the context key of WithStorageCredentials.
type storageCredentialsKey struct{}

// WithStorageCredentials returns ctx carrying creds. The REST catalog's
// handlers (package catalog/rest) add them to every LoadTableResult they
// answer to a request with that context: as its storage-credentials, and,
// for clients that read only config, the properties of the credential
// whose prefix covers the table's metadata file also in its config. Attach
// them only for a client that may read the files and asked for them.
func WithStorageCredentials(ctx context.Context, creds ...StorageCredential) context.Context {
	return context.WithValue(ctx, storageCredentialsKey{}, slices.Clone(creds))
}

// StorageCredentials returns the credentials ctx carries (see
// WithStorageCredentials), nil if none.
func StorageCredentials(ctx context.Context) []StorageCredential {
	creds, _ := ctx.Value(storageCredentialsKey{}).([]StorageCredential)
	return creds
}
