package cold

import (
	"context"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// stageMerge stages, in tx, an append of no files that merges every data
// manifest of the table into as few as the manifest target size allows
// (one per partition spec for a table of ours), with summary.
//
// iceberg-go merges manifests only when it appends, and only a table with
// table.ManifestMergeEnabledKey set; the merge is left enabled, so that
// later appends keep the count bounded by the table's
// table.ManifestMinMergeCountKey. That count is lowered to 1 for this
// append alone: a compaction merges whatever there is.
func stageMerge(ctx context.Context, tx *table.Transaction, props iceberg.Properties, summary iceberg.Properties) error {
	minCount, had := props[table.ManifestMinMergeCountKey]
	if err := tx.SetProperties(iceberg.Properties{
		table.ManifestMergeEnabledKey:  "true",
		table.ManifestMinMergeCountKey: "1",
	}); err != nil {
		return fmt.Errorf("enable the manifest merge: %w", err)
	}
	// The producer reads the properties when it is created, here.
	if err := tx.AddFiles(ctx, nil, summary, true); err != nil {
		return fmt.Errorf("merge manifests: %w", err)
	}
	if had {
		if err := tx.SetProperties(iceberg.Properties{table.ManifestMinMergeCountKey: minCount}); err != nil {
			return fmt.Errorf("restore %s: %w", table.ManifestMinMergeCountKey, err)
		}
		return nil
	}
	if err := tx.RemoveProperties([]string{table.ManifestMinMergeCountKey}); err != nil {
		return fmt.Errorf("restore %s: %w", table.ManifestMinMergeCountKey, err)
	}
	return nil
}

// count returns r's batches, counting their rows into r.rows.
func (r *records) count() iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for b, err := range r.batches {
			if err == nil {
				r.rows += b.NumRows()
			}
			if !yield(b, err) {
				return
			}
		}
	}
}

// manifestCount returns the number of data manifests of snapshot s.
func manifestCount(ctx context.Context, ice *table.Table, s *table.Snapshot) (int, error) {
	if s == nil {
		return 0, nil
	}
	fs, err := ice.FS(ctx)
	if err != nil {
		return 0, err
	}
	ms, err := s.Manifests(fs)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range ms {
		if m.ManifestContent() == iceberg.ManifestContentData {
			n++
		}
	}
	return n, nil
}
