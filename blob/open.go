package blob

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"

	gcblob "gocloud.dev/blob"
	"gocloud.dev/blob/azureblob"
	"gocloud.dev/blob/gcsblob"
	"gocloud.dev/blob/memblob"
	"gocloud.dev/blob/s3blob"
)

// Open opens the bucket that rawURL names. The scheme selects the driver:
//
//   - file:///abs/dir: a local directory, which must exist; no query.
//   - s3://bucket: Amazon S3 or an S3-compatible store, through the AWS SDK
//     v2. Query parameters such as region, endpoint and use_path_style are
//     those of gocloud.dev/blob/s3blob; credentials come from the usual
//     AWS environment.
//   - gs://bucket: Google Cloud Storage (gocloud.dev/blob/gcsblob), with
//     Application Default Credentials; STORAGE_EMULATOR_HOST=host:port
//     points it at an emulator instead, unauthenticated.
//   - azblob://container: Azure Blob Storage (gocloud.dev/blob/azureblob).
//     The account comes from AZURE_STORAGE_CONNECTION_STRING, or from
//     AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY (or
//     AZURE_STORAGE_SAS_TOKEN), or else Azure's default identity; query
//     parameters such as domain, protocol and storage_account are those
//     of azureblob.
//   - mem://: a new empty bucket in memory, gone when closed.
func Open(ctx context.Context, rawURL string) (*Bucket, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("blob: open: %w", err)
	}
	switch u.Scheme {
	case "file":
		l, err := openFileURL(u)
		if err != nil {
			return nil, fmt.Errorf("blob: open %s: %w", rawURL, err)
		}
		return &Bucket{d: l}, nil
	case s3blob.Scheme, gcsblob.Scheme, azureblob.Scheme, memblob.Scheme:
		// The drivers registered themselves with the default mux when
		// imported; the mux also applies their URL parameters.
		b, err := gcblob.DefaultURLMux().OpenBucketURL(ctx, u)
		if err != nil {
			return nil, fmt.Errorf("blob: open %s: %w", rawURL, err)
		}
		return &Bucket{d: &cloud{b: b}, retried: u.Scheme != memblob.Scheme}, nil
	default:
		return nil, fmt.Errorf("blob: open %s: unknown scheme %q (want file, s3, gs, azblob or mem)", rawURL, u.Scheme)
	}
}

func openFileURL(u *url.URL) (*local, error) {
	switch {
	case u.Opaque != "" || !filepath.IsAbs(filepath.FromSlash(u.Path)):
		return nil, fmt.Errorf("path must be absolute, as in file:///var/lib/meterstore")
	case u.Host != "" && u.Host != "localhost":
		return nil, fmt.Errorf("host %q: only local paths are supported", u.Host)
	case u.RawQuery != "":
		return nil, fmt.Errorf("file URLs take no query parameters")
	}
	return openLocal(filepath.Clean(filepath.FromSlash(u.Path)))
}
