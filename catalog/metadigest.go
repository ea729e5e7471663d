package catalog

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go/table"
)

// ErrMetadataAltered is wrapped by the report of a table's current metadata
// file whose bytes are not those its log entry recorded.
var ErrMetadataAltered = errors.New("the metadata file is not the one its commit recorded")

// A MetadataAlteredError reports a table's current metadata file whose
// SHA-256 is not the one its log entry recorded. It wraps
// ErrMetadataAltered.
type MetadataAlteredError struct {
	Location  string // the metadata file
	Want, Got string // SHA-256 recorded and found, hex
}

// Error names the file and both digests.
func (e *MetadataAlteredError) Error() string {
	return fmt.Sprintf("catalog: metadata file %s has SHA-256 %s, its commit recorded %s", e.Location, e.Got, e.Want)
}

// Unwrap returns ErrMetadataAltered.
func (e *MetadataAlteredError) Unwrap() error { return ErrMetadataAltered }

// VerifyMetadata reads the current metadata file of the table and compares
// its SHA-256 with the one the log entry that committed it recorded: the
// snapshots it holds, and what they vouch for (a data file's digest, see
// the cold tier), are the committed ones only if it is. A mismatch is a
// *MetadataAlteredError; a table whose head entry predates the digest
// passes unchecked (ok false).
func (c *Catalog) VerifyMetadata(ctx context.Context, ident table.Identifier) (ok bool, err error) {
	h, err := c.current(ctx, ident)
	if err != nil {
		return false, err
	}
	if h.MetadataSHA256 == "" {
		return false, nil
	}
	if _, err := c.commitData(ctx, h); err != nil {
		var me *MetadataAlteredError
		if errors.As(err, &me) {
			return false, err
		}
		return false, fmt.Errorf("catalog: verify the metadata of %v: %w", ident, err)
	}
	return true, nil
}
