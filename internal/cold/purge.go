package cold

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

// Purge destroys the cold table name: its catalog entry and every file
// under its location. It is the only operation of the tier that deletes
// readings, and there is no way back, so confirm must repeat the name. It
// returns the number of files deleted.
//
// The table is dropped from the catalog first and its files deleted after:
// a crash in between leaves unreferenced files, never a table whose files
// are gone.
func (c *Tier) Purge(ctx context.Context, name, confirm string) (int, error) {
	if name == "" || confirm != name {
		return 0, fmt.Errorf("cold: purge %q: %w", name, series.ErrNotConfirmed)
	}
	ident := table.Identifier{c.opts.Namespace, name}
	ice, err := c.cat.LoadTable(ctx, ident)
	if err != nil {
		return 0, fmt.Errorf("cold: purge %s: %w", name, err)
	}
	fs, err := ice.FS(ctx)
	if err != nil {
		return 0, fmt.Errorf("cold: purge %s: file IO: %w", name, err)
	}
	files, err := tableFiles(ctx, ice, fs)
	if err != nil {
		return 0, fmt.Errorf("cold: purge %s: %w", name, err)
	}
	if err := c.cat.DropTable(ctx, ident); err != nil {
		return 0, fmt.Errorf("cold: purge %s: drop: %w", name, err)
	}
	n := 0
	var errs error
	for _, f := range files {
		switch err := fs.Remove(f); {
		case err == nil:
			n++
		case !errors.Is(err, iofs.ErrNotExist):
			errs = errors.Join(errs, err)
		}
	}
	if errs != nil {
		return n, fmt.Errorf("cold: purge %s: dropped, but %d files remain: %w", name, len(files)-n, errs)
	}
	c.log.Info("cold: table purged", "table", name, "files", n)
	return n, nil
}

// tableFiles returns every file of ice. Where the file IO can list, that is
// everything under the table's location, files of failed commits included;
// only a location named after the table is listed, so that a table placed at
// the top of a warehouse cannot take the warehouse with it. Otherwise it is
// every file the metadata references.
func tableFiles(ctx context.Context, ice *table.Table, fs icebergio.IO) ([]string, error) {
	loc := strings.TrimSuffix(ice.Location(), "/")
	name := ice.Identifier()[len(ice.Identifier())-1]
	base := path.Base(loc)
	if l, ok := fs.(icebergio.ListableIO); ok && (base == name || strings.HasPrefix(base, name+"-") || base == name+".db") {
		var out []string
		err := l.WalkDir(loc, func(p string, d iofs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				out = append(out, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", loc, err)
		}
		return out, nil
	}
	return referencedFiles(ctx, ice, fs)
}

// referencedFiles returns the files the metadata of ice references: data
// files, manifests, manifest lists, and metadata files.
func referencedFiles(_ context.Context, ice *table.Table, fs icebergio.IO) ([]string, error) {
	seen := make(map[string]bool)
	var out []string
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	meta := ice.Metadata()
	for _, s := range meta.Snapshots() {
		add(s.ManifestList)
		manifests, err := s.Manifests(fs)
		if err != nil {
			return nil, fmt.Errorf("snapshot %d: %w", s.SnapshotID, err)
		}
		for _, m := range manifests {
			add(m.FilePath())
			entries, err := m.FetchEntries(fs, false)
			if err != nil {
				return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
			}
			for _, e := range entries {
				add(e.DataFile().FilePath())
			}
		}
	}
	for e := range meta.PreviousFiles() {
		add(e.MetadataFile)
	}
	add(ice.MetadataLocation())
	return out, nil
}
