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

// WithStorageCredentials returns ctx carrying creds. The handlers of
// Handler and WritableHandler add them to every LoadTableResult they
// answer to a request with that context: as its storage-credentials, and,
// for clients that read only config, the properties of the credential
// whose prefix covers the table's metadata file also in its config. Attach
// them only for a client that may read the files and asked for them.
func WithStorageCredentials(ctx context.Context, creds ...StorageCredential) context.Context {
	return context.WithValue(ctx, storageCredentialsKey{}, slices.Clone(creds))
}

// addStorageCredentials adds the credentials ctx carries to a
// LoadTableResult body whose metadata file is at loc.
func addStorageCredentials(ctx context.Context, body map[string]any, loc string) {
	creds, _ := ctx.Value(storageCredentialsKey{}).([]StorageCredential)
	if len(creds) == 0 {
		return
	}
	body["storage-credentials"] = creds
	cfg, _ := body["config"].(map[string]string)
	if cfg == nil {
		cfg = map[string]string{}
		body["config"] = cfg
	}
	// The longest prefix wins, as in Iceberg's S3FileIO and PyIceberg.
	best := -1
	for i, c := range creds {
		if strings.HasPrefix(loc, c.Prefix) && (best < 0 || len(c.Prefix) > len(creds[best].Prefix)) {
			best = i
		}
	}
	if best >= 0 {
		maps.Copy(cfg, creds[best].Config)
	}
}

// s3ClientRegion is the property of Java's AWS clients (client.region)
// for the region that S3FileIO signs for; iceberg-go and PyIceberg read
// s3.region.
const s3ClientRegion = "client.region"

// storageDefaults returns the warehouse's file IO properties that hold no
// secret, under the names of iceberg-go and PyIceberg and of Java's
// S3FileIO: the endpoint, region and addressing style a reader needs to
// reach the files at all.
func storageDefaults(props map[string]string) map[string]string {
	cfg := withoutSecrets(props)
	// Java's S3FileIO knows path-style addressing and the region by other
	// names than iceberg-go and PyIceberg.
	if cfg[icebergio.S3ForceVirtualAddressing] == "false" {
		cfg[s3PathStyleAccess] = "true"
	}
	if r, ok := cfg[icebergio.S3Region]; ok {
		cfg[s3ClientRegion] = r
	}
	return cfg
}
