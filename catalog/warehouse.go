package catalog

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/meterstore/meterstore/blob"

	// iceberg-go reads and writes s3:// data files through this driver.
	_ "github.com/apache/iceberg-go/io/gocloud/s3"
)

// Warehouse is the object store that holds the tables, seen two ways: as a
// blob.Bucket for the catalog's own conditional writes, and as Root (the
// Iceberg location of the bucket's top, such as file:///srv/wh or
// s3://bucket) with Props for iceberg-go's file IO.
type Warehouse struct {
	Bucket *blob.Bucket
	Root   string
	Props  iceberg.Properties
}

// OpenWarehouse opens the warehouse at a blob URL (file:///abs/dir or
// s3://bucket?endpoint=...&region=...&use_path_style=true) and derives the
// Iceberg root and IO properties from it.
func OpenWarehouse(ctx context.Context, rawURL string) (Warehouse, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return Warehouse{}, fmt.Errorf("catalog: warehouse %q: %w", rawURL, err)
	}
	wh := Warehouse{Props: iceberg.Properties{}}
	switch u.Scheme {
	case "file":
		if !filepath.IsAbs(u.Path) {
			return Warehouse{}, fmt.Errorf("catalog: warehouse %q: the path must be absolute", rawURL)
		}
		wh.Root = "file://" + strings.TrimSuffix(u.Path, "/")
	case "s3":
		q := u.Query()
		wh.Root = "s3://" + u.Host
		if v := q.Get("endpoint"); v != "" {
			wh.Props[icebergio.S3EndpointURL] = v
		}
		if v := q.Get("region"); v != "" {
			wh.Props[icebergio.S3Region] = v
		}
		if q.Get("use_path_style") == "true" {
			wh.Props[icebergio.S3ForceVirtualAddressing] = "false"
		}
	default:
		return Warehouse{}, fmt.Errorf("catalog: warehouse %q: scheme %q is not supported (want file or s3)", rawURL, u.Scheme)
	}
	if wh.Bucket, err = blob.Open(ctx, rawURL); err != nil {
		return Warehouse{}, fmt.Errorf("catalog: warehouse: %w", err)
	}
	return wh, nil
}

// Key returns the blob key of an Iceberg location inside the warehouse, or
// an error if the location is outside it.
func (w Warehouse) Key(location string) (string, error) {
	k, ok := strings.CutPrefix(location, w.Root+"/")
	if !ok {
		return "", fmt.Errorf("catalog: location %q is outside the warehouse %q", location, w.Root)
	}
	return k, nil
}
