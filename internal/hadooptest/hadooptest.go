// Package hadooptest commits to an Iceberg table's Hadoop layout on a
// local directory as Apache Iceberg's HadoopTableOperations does, so that
// tests can play a Hadoop-catalog writer (Spark with type=hadoop) on a
// MeterStore warehouse without a JVM.
//
// The rules followed are HadoopTableOperations': the current version is the
// one metadata/version-hint.text names, advanced while v<N+1>.metadata.json
// exists; a commit writes its metadata to a temporary file, renames it to
// v<N+1>.metadata.json unless that name exists (then the commit fails), and
// then replaces version-hint.text through a temporary file of its own.
package hadooptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// Writer is a Hadoop-catalog writer on one table. It implements
// table.CatalogIO, so iceberg-go's transactions commit through it.
type Writer struct {
	// Dir is the table's directory on the local filesystem.
	Dir string
}

var _ table.CatalogIO = (*Writer)(nil)

func (w *Writer) metadataDir() string { return filepath.Join(w.Dir, "metadata") }

// MetadataFile returns the path of v<n>.metadata.json.
func (w *Writer) MetadataFile(n int64) string {
	return filepath.Join(w.metadataDir(), fmt.Sprintf("v%d.metadata.json", n))
}

// Version returns the table's current version as a Hadoop reader finds it.
func (w *Writer) Version() (int64, error) {
	data, err := os.ReadFile(filepath.Join(w.metadataDir(), "version-hint.text"))
	if err != nil {
		return 0, fmt.Errorf("hadooptest: version hint: %w", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("hadooptest: version hint %q: %w", data, err)
	}
	// A commit whose hint was not written yet is current all the same.
	for range 1000 {
		if _, err := os.Stat(w.MetadataFile(n + 1)); err != nil {
			break
		}
		n++
	}
	return n, nil
}

// LoadTable implements table.CatalogIO: the table at its current version.
func (w *Writer) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	n, err := w.Version()
	if err != nil {
		return nil, err
	}
	loc := "file://" + w.MetadataFile(n)
	return table.NewFromLocation(ctx, ident, loc, icebergio.LoadFSFunc(iceberg.Properties{}, loc), w)
}

// CommitTable implements table.CatalogIO as HadoopTableOperations.commit
// does.
func (w *Writer) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	cur, err := w.LoadTable(ctx, ident)
	if err != nil {
		return nil, "", err
	}
	for _, r := range reqs {
		if err := r.Validate(cur.Metadata()); err != nil {
			return nil, "", fmt.Errorf("%w: %w", table.ErrCommitFailed, err)
		}
	}
	next, err := table.UpdateTableMetadata(cur.Metadata(), updates, cur.MetadataLocation())
	if err != nil {
		return nil, "", err
	}
	data, err := json.Marshal(next)
	if err != nil {
		return nil, "", err
	}
	n, err := w.Version()
	if err != nil {
		return nil, "", err
	}
	tmp := filepath.Join(w.metadataDir(), uuid.NewString()+".metadata.json")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return nil, "", err
	}
	defer os.Remove(tmp)
	final := w.MetadataFile(n + 1)
	// A link fails when the name exists: the rename that refuses to
	// replace a version, in one step.
	if err := os.Link(tmp, final); err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, "", fmt.Errorf("%w: version %d already exists", table.ErrCommitFailed, n+1)
		}
		return nil, "", err
	}
	hintTmp := filepath.Join(w.metadataDir(), uuid.NewString()+"-version-hint.temp")
	if err := os.WriteFile(hintTmp, []byte(strconv.FormatInt(n+1, 10)), 0o644); err != nil {
		return nil, "", err
	}
	if err := os.Rename(hintTmp, filepath.Join(w.metadataDir(), "version-hint.text")); err != nil {
		return nil, "", err
	}
	return next, "file://" + final, nil
}
