package cold

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"path"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// references are the files a table's metadata references, by kind, each
// once.
type references struct {
	data      []string // data and delete files
	manifests []string
	lists     []string // manifest lists
	other     []string // statistics files, digest indexes and earlier metadata files
	current   string   // the current metadata file
}

// all returns every referenced file, in the order a purge deletes them: a
// file before the file that names it, the current metadata file last, so
// that a purge cut short finds what is left by reading the metadata again.
func (r references) all() []string {
	out := make([]string, 0, len(r.data)+len(r.manifests)+len(r.lists)+len(r.other)+1)
	out = append(out, r.data...)
	out = append(out, r.manifests...)
	out = append(out, r.lists...)
	out = append(out, r.other...)
	if r.current != "" {
		out = append(out, r.current)
	}
	return out
}

// collectReferences returns the files meta, the metadata at location loc,
// references: of every snapshot it still holds, not only the current one,
// the manifest list, its manifests and their data and delete files, and
// the digest index its summary names (SummaryDigests); the statistics
// files; and the metadata files of its metadata log. With
// missingOK, a manifest list or manifest that is gone is passed over (what
// it named was deleted before it, see all); otherwise it is an error.
func collectReferences(meta table.Metadata, loc string, fs icebergio.IO, missingOK bool) (references, error) {
	r := references{current: loc}
	seen := map[string]bool{loc: true}
	add := func(to *[]string, p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			*to = append(*to, p)
		}
	}
	gone := func(err error) bool { return missingOK && errors.Is(err, iofs.ErrNotExist) }
	for _, s := range meta.Snapshots() {
		if s.Summary != nil {
			add(&r.other, s.Summary.Properties[SummaryDigests])
		}
		if s.ManifestList == "" || seen[s.ManifestList] {
			continue
		}
		add(&r.lists, s.ManifestList)
		manifests, err := s.Manifests(fs)
		if gone(err) {
			continue
		}
		if err != nil {
			return references{}, fmt.Errorf("snapshot %d: manifest list %s: %w", s.SnapshotID, s.ManifestList, err)
		}
		for _, m := range manifests {
			if seen[m.FilePath()] {
				continue // shared with an earlier snapshot: read once
			}
			add(&r.manifests, m.FilePath())
			for e, err := range m.Entries(fs, false) {
				if gone(err) {
					break
				}
				if err != nil {
					return references{}, fmt.Errorf("snapshot %d: manifest %s: %w", s.SnapshotID, m.FilePath(), err)
				}
				add(&r.data, e.DataFile().FilePath())
			}
		}
	}
	for st := range meta.Statistics() {
		add(&r.other, st.StatisticsPath)
	}
	for st := range meta.PartitionStatistics() {
		add(&r.other, st.StatisticsPath)
	}
	for e := range meta.PreviousFiles() {
		add(&r.other, e.MetadataFile)
	}
	return r, nil
}

// referencedFiles returns the files the metadata of ice references: data
// files, manifests, manifest lists, statistics and metadata files.
func referencedFiles(_ context.Context, ice *table.Table, fs icebergio.IO) ([]string, error) {
	r, err := collectReferences(ice.Metadata(), ice.MetadataLocation(), fs, false)
	if err != nil {
		return nil, err
	}
	return r.all(), nil
}

// pathKey returns the path of a file location without its scheme and
// authority, cleaned: file:///wh/t/f, /wh/t/f and file:/wh/t/f are one
// file. Listings and metadata spell locations differently (the local file
// IO lists bare paths, manifests record URIs), and a file compared under
// two spellings would look unreferenced. Dropping the authority can make
// files of two buckets one key, which only keeps more.
func pathKey(loc string) string {
	p := loc
	if i := strings.Index(loc, "://"); i >= 0 {
		rest := loc[i+3:]
		j := strings.IndexByte(rest, '/')
		if j < 0 {
			return "/"
		}
		p = rest[j:]
	} else if rest, ok := strings.CutPrefix(loc, "file:"); ok {
		p = rest
	}
	return path.Clean("/" + p)
}

// ownLocation reports whether loc is named after the table name, so that
// everything under it is the table's: a table placed at the top of a
// warehouse, or of a namespace, shares its location with others.
func ownLocation(loc, name string) bool {
	base := path.Base(strings.TrimSuffix(loc, "/"))
	return base == name || strings.HasPrefix(base, name+"-") || base == name+".db"
}

// forkFiles returns what the metadata file at loc references (itself not
// included) when it is not the table's metadata but its files must stay,
// such as a foreign commit moved aside; its bytes are data, gzip-compressed
// where its name says so.
func forkFiles(loc string, data []byte, fs icebergio.IO) ([]string, error) {
	if strings.HasSuffix(loc, ".gz.metadata.json") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", loc, err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("%s: %w", loc, err)
		}
	}
	md, err := table.ParseMetadataBytes(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	r, err := collectReferences(md, "", fs, true)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	return r.all(), nil
}
