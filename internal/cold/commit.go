package cold

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/meterstore/meterstore/series"
)

// A Commit describes a snapshot the Tier committed.
type Commit struct {
	SnapshotID int64
	Watermark  time.Time // the watermark the snapshot carries
	Rows       int64     // readings it added
	Files      int       // data files it added
	Bytes      int64     // their total size
}

// A write is one snapshot to commit: the rows of enc, or no rows at all when
// enc is nil, with summary added to the snapshot summary.
type write struct {
	op      string
	enc     *encoder
	rows    Rows
	check   func(*series.Reading) string
	summary iceberg.Properties
	// rowsKey, if set, is the summary key that receives the row count.
	rowsKey string
	// pin fails the commit on any concurrent commit instead of letting
	// iceberg-go replay it onto the new head: for writes that checked the
	// table's contents and are only valid against what they checked.
	pin bool
	// records, if set instead of enc, are the streams of rows to write: a
	// compaction's, read back from the files it replaces.
	records []*records
	// replace are data files of the table the snapshot removes, while it
	// adds the files it writes.
	replace []iceberg.DataFile
	// merge merges the table's manifests after the snapshot is staged:
	// see stageMerge.
	merge bool
	// adopt are digests the snapshot records of files of the table
	// written before digests were: see AdoptDigests.
	adopt []FileDigest
}

// records are Arrow record batches in the table's current schema, or a
// subset of its columns.
type records struct {
	schema  *arrow.Schema
	batches iter.Seq2[arrow.RecordBatch, error]
	enc     *encoder // that makes batches, if one does: its error is the one to report
	rows    int64    // counted as they are written
}

// commitTimeout bounds the re-read after a failed commit, which runs even
// when the caller's context is done: deciding what to delete must not be
// cut short.
const commitTimeout = time.Minute

// commit writes w's data files and commits them as one append snapshot of
// ice, with the digest index that records their SHA-256 (see
// SummaryDigests), computed as they were written. A commit that did not
// land deletes every file it wrote before it returns the error; one whose
// outcome is unknown keeps them and says so.
//
// iceberg-go never replays the snapshot onto a newer head: the index is
// built on the snapshot it replaces, and a replay would commit an index
// that lacks the files of the commits in between. A write that is not
// pinned is staged again on the new head instead, with the data files
// written once, as often as the table's commit.retry.num-retries allows.
func (c *Tier) commit(ctx context.Context, h *Table, ice *table.Table, w write) (Commit, error) {
	p, err := c.writeData(ctx, h, ice, w)
	if err != nil {
		return Commit{}, err
	}
	return c.land(ctx, h, p, nil)
}

// A pending commit is a write whose data files are written and hashed,
// but not yet committed: land commits it, abandon deletes its files.
type pending struct {
	w       write
	wt      *table.Table // the table as of the next attempt, through rec
	rec     *recordingFS
	files   []iceberg.DataFile
	added   []FileDigest
	rows    int64
	summary iceberg.Properties
	// base, if set, is the proven chain of wt's current snapshot, read
	// before the files were written (see stage).
	base *chain
}

// writeData writes the data files of w on ice, the first half of commit.
func (c *Tier) writeData(ctx context.Context, h *Table, ice *table.Table, w write) (*pending, error) {
	fs, err := ice.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("cold: %s %s: file IO: %w", w.op, h.decl.Name, err)
	}
	wfs, ok := fs.(icebergio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("cold: %s %s: %w", w.op, h.decl.Name, table.ErrWriteIORequired)
	}
	p := &pending{w: w, rec: &recordingFS{WriteFileIO: wfs}}
	p.wt = c.through(ice, p.rec)

	began := time.Now() // the wall clock, for SummaryWriteMillis: a cost, not a time of the data
	p.summary = maps.Clone(w.summary)
	if p.summary == nil {
		p.summary = iceberg.Properties{}
	}

	streams := w.records
	if w.enc != nil {
		streams = []*records{{schema: w.enc.schema, batches: w.enc.batches(w.rows, w.check), enc: w.enc}}
	}
	for _, s := range streams {
		// Every partition touched keeps a file, with its buffered row
		// group, open until its month is passed or the stream ends:
		// superseded versions interleave with the current ones, so no
		// write is clustered by partition.
		written, err := writeFiles(ctx, p.wt, p.rec, s)
		if err != nil {
			if s.enc != nil {
				if _, eerr := s.enc.result(); eerr != nil {
					// The typed error of the row or source that ended the stream.
					return nil, c.discard(h, w.op, p.rec, eerr)
				}
			}
			return nil, c.discard(h, w.op, p.rec, fmt.Errorf("cold: %s %s: write data files: %w", w.op, h.decl.Name, err))
		}
		p.files = append(p.files, written...)
		if s.enc != nil {
			n, _ := s.enc.result()
			p.rows += n
		} else {
			p.rows += s.rows
		}
	}
	if w.rowsKey != "" {
		p.summary[w.rowsKey] = strconv.FormatInt(p.rows, 10)
		p.summary[SummaryWriteMillis] = strconv.FormatInt(time.Since(began).Milliseconds(), 10)
	}
	p.added = slices.Clone(w.adopt)
	for _, f := range p.files {
		d, ok := p.rec.digest(f.FilePath())
		if !ok || d.Size != f.FileSizeBytes() {
			return nil, c.discard(h, w.op, p.rec, fmt.Errorf("cold: %s %s: data file %s of %d bytes: its digest was not recorded as it was written (%d bytes hashed)",
				w.op, h.decl.Name, f.FilePath(), f.FileSizeBytes(), d.Size))
		}
		d.Path, d.Records = f.FilePath(), f.Count()
		p.added = append(p.added, d)
	}
	return p, nil
}

// through returns ice with its file IO through rec.
func (c *Tier) through(ice *table.Table, rec *recordingFS) *table.Table {
	return table.New(ice.Identifier(), ice.Metadata(), ice.MetadataLocation(),
		func(context.Context) (icebergio.IO, error) { return rec, nil }, c.cat)
}

// abandon deletes the files of p, which will not be committed.
func (c *Tier) abandon(h *Table, p *pending, cause error) error {
	return c.discard(h, p.w.op, p.rec, cause)
}

// land commits p, with extra added to its snapshot summary: as one
// append snapshot of the table p was written on, with the digest index
// that records their SHA-256 (see SummaryDigests), computed as they were
// written. A commit that did not land deletes every file it wrote before
// it returns the error; one whose outcome is unknown keeps them and says
// so.
//
// iceberg-go never replays the snapshot onto a newer head: the index is
// built on the snapshot it replaces, and a replay would commit an index
// that lacks the files of the commits in between. A write that is not
// pinned is staged again on the new head instead, with the data files
// written once, as often as the table's commit.retry.num-retries allows.
func (c *Tier) land(ctx context.Context, h *Table, p *pending, extra iceberg.Properties) (Commit, error) {
	w, rec, wt := p.w, p.rec, p.wt
	summary := maps.Clone(p.summary)
	maps.Copy(summary, extra)
	base := p.base
	retries := wt.Properties().GetInt(table.CommitNumRetriesKey, table.CommitNumRetriesDefault)
	for attempt := 0; ; attempt++ {
		id := uuid.NewString()
		mark := len(rec.created())
		st, err := c.stage(ctx, h, wt, rec, w, p.files, p.added, id, maps.Clone(summary), base)
		if err != nil {
			return Commit{}, c.discard(h, w.op, rec, err)
		}
		if c.beforeCommit != nil {
			c.beforeCommit(ctx, h.decl.Name)
		}
		landed, _, err := c.cat.CommitTable(ctx, h.ident, st.reqs, st.updates)
		if landed == nil && !w.pin && attempt < retries && errors.Is(err, table.ErrCommitFailed) {
			// Another commit came first and nothing of this attempt
			// landed: its manifests and index go, its data files stay
			// for the next.
			if _, rerr := rec.removeSince(mark); rerr != nil {
				c.log.Warn("cold: files of a lost commit attempt could not be removed", "table", h.decl.Name, "op", w.op, "err", rerr)
			}
			cur, lerr := c.load(ctx, h)
			if lerr != nil {
				return Commit{}, c.discard(h, w.op, rec, fmt.Errorf("cold: %s %s: commit: %w (and reading the table again: %w)", w.op, h.decl.Name, err, lerr))
			}
			wt, base = c.through(cur, rec), nil
			continue
		}
		meta := landed
		if meta == nil {
			if meta, err = c.settle(ctx, h, w.op, rec, id, err); err != nil {
				return Commit{}, err
			}
		}
		s := findCommit(meta, id)
		if s == nil {
			return Commit{}, fmt.Errorf("cold: %s %s: the committed metadata lacks snapshot %s=%s", w.op, h.decl.Name, SummaryCommitID, id)
		}
		out := Commit{SnapshotID: s.SnapshotID, Rows: p.rows, Files: len(p.files)}
		out.Watermark, _ = parseTime(s.Summary.Properties[SummaryWatermark])
		for _, f := range p.files {
			out.Bytes += f.FileSizeBytes()
		}
		return out, nil
	}
}

// A staged commit is what a commit of the Tier asks of the catalog: the
// snapshots iceberg-go staged, each with its digest index in its summary,
// and the move of the main branch to the last of them.
type staged struct {
	reqs    []table.Requirement
	updates []table.Update
}

// stage stages the snapshot of w on wt, the table as of the attempt: the
// data files, the files w replaces, and, for every snapshot staged, the
// digest index that pins it whole (see DigestIndex), written through rec
// for commit id. The current snapshot's chain is proven first: a commit
// carries its manifests on and pins them anew, so it must not build on
// ones that are not the committed ones. Pinned to wt's current snapshot,
// the commit fails rather than replay.
//
// proven, if not nil, is a chain of wt's current snapshot proven earlier,
// used instead of a fresh proof unless w merges manifests: carried on,
// its manifests are pinned by the digests that proof read, so a file
// altered since still fails the next read.
func (c *Tier) stage(ctx context.Context, h *Table, wt *table.Table, rec *recordingFS, w write, files []iceberg.DataFile, added []FileDigest, id string, summary iceberg.Properties, proven *chain) (staged, error) {
	fail := func(err error) (staged, error) {
		var altered *AlteredFileError
		if errors.As(err, &altered) {
			return staged{}, fmt.Errorf("cold: %s %s: %w", w.op, h.decl.Name, err)
		}
		return staged{}, fmt.Errorf("cold: %s %s: stage snapshot: %w", w.op, h.decl.Name, err)
	}
	summary[SummaryCommitID] = id
	base := wt.Metadata()
	var baseChain *chain
	if cur := base.CurrentSnapshot(); cur != nil && proven != nil && proven.snapshot == cur.SnapshotID && !w.merge {
		baseChain = proven
	} else if cur != nil {
		// Afresh, not from the cache: what a proof found earlier may have
		// been altered since, and a manifest merge would carry it on.
		var err error
		if baseChain, err = readChain(ctx, rec, h.decl.Name, base, cur, &c.chains.memo); err != nil {
			return fail(err)
		}
	}
	// Stamped last before staging, after the files are written: every
	// write acknowledged by now is in the tiers the snapshot sees.
	summary[SummaryKnownAt] = FormatTime(time.Now())
	tx := wt.NewTransaction()
	var err error
	switch {
	case len(w.replace) > 0:
		err = tx.ReplaceDataFilesWithDataFiles(ctx, w.replace, files, summary, table.WithoutDuplicateCheck())
	case len(files) > 0:
		// Our files have fresh names; checking them against every file
		// of the table would read all its manifests on every commit.
		err = tx.AddDataFiles(ctx, files, summary, table.WithoutDuplicateCheck())
	case !w.merge:
		// An append of no files is a snapshot of its own: how a commit
		// moves W over an empty window, or re-stamps it.
		err = tx.AddFiles(ctx, nil, summary, true)
	}
	if err == nil && w.merge {
		err = stageMerge(ctx, tx, wt.Properties(), summary)
	}
	if err != nil {
		return fail(err)
	}
	st, err := tx.StagedTable()
	if err != nil {
		return fail(err)
	}
	next := st.Metadata()
	var snaps []table.Snapshot
	for _, s := range next.Snapshots() {
		if base.SnapshotByID(s.SnapshotID) == nil {
			snaps = append(snaps, s)
		}
	}
	if len(snaps) == 0 {
		return fail(errors.New("iceberg-go staged no snapshot"))
	}
	live := liveDigests(baseChain, w.replace, added)
	out := staged{reqs: []table.Requirement{table.AssertTableUUID(base.TableUUID())}}
	if cur := base.CurrentSnapshot(); cur != nil {
		out.reqs = append(out.reqs, table.AssertRefSnapshotID(table.MainBranch, &cur.SnapshotID))
	} else {
		out.reqs = append(out.reqs, table.AssertRefSnapshotID(table.MainBranch, nil))
	}
	for i, s := range snaps {
		idx, err := pinSnapshot(rec, &s, baseChain, live)
		if err != nil {
			return fail(err)
		}
		name := id
		if i > 0 {
			name = fmt.Sprintf("%s-%d", id, i)
		}
		props := maps.Clone(s.Summary.Properties)
		if err := writeDigests(rec, wt.Location(), name, idx, props); err != nil {
			return fail(err)
		}
		s.Summary = &table.Summary{Operation: s.Summary.Operation, Properties: props}
		out.updates = append(out.updates, table.NewAddSnapshotUpdate(&s))
	}
	out.updates = append(out.updates,
		table.NewSetSnapshotRefUpdate(table.MainBranch, snaps[len(snaps)-1].SnapshotID, table.BranchRef, -1, -1, -1))
	out.updates = append(out.updates, propertyUpdates(base.Properties(), next.Properties())...)
	return out, nil
}

// liveDigests returns what the index of a snapshot records of its data
// files: those of base, the proven chain of the snapshot it replaces (nil
// for none), less removed, plus added.
func liveDigests(base *chain, removed []iceberg.DataFile, added []FileDigest) map[string]FileDigest {
	live := map[string]FileDigest{}
	if base != nil {
		for _, f := range base.files {
			d, ok := base.index.files[pathKey(f.FilePath())]
			if !ok || d.Size != f.FileSizeBytes() {
				// A foreign engine's file: known by its manifest entry.
				d = FileDigest{}
			}
			d.Path, d.Size, d.Records = f.FilePath(), f.FileSizeBytes(), f.Count()
			live[pathKey(f.FilePath())] = d
		}
	}
	for _, f := range removed {
		delete(live, pathKey(f.FilePath()))
	}
	for _, d := range added {
		live[pathKey(d.Path)] = d
	}
	return live
}

// pinSnapshot returns the digest index of snapshot s, staged through rec
// on top of base: its data files as live records them, its manifest list
// and every manifest it lists by the digests rec took as they were
// written, or, for a manifest carried on, by base's.
func pinSnapshot(rec *recordingFS, s *table.Snapshot, base *chain, live map[string]FileDigest) (DigestIndex, error) {
	idx := DigestIndex{Format: DigestFormat, SnapshotID: s.SnapshotID, Files: make([]FileDigest, 0, len(live))}
	for _, d := range live {
		idx.Files = append(idx.Files, d)
	}
	slices.SortFunc(idx.Files, func(a, b FileDigest) int { return strings.Compare(a.Path, b.Path) })
	list, ok := rec.digest(s.ManifestList)
	if !ok {
		return DigestIndex{}, fmt.Errorf("snapshot %d: its manifest list %s was not hashed as it was written", s.SnapshotID, s.ManifestList)
	}
	list.Path = s.ManifestList
	idx.ManifestList = &list
	manifests, err := s.Manifests(rec)
	if err != nil {
		return DigestIndex{}, fmt.Errorf("snapshot %d: read its manifest list: %w", s.SnapshotID, err)
	}
	for _, m := range manifests {
		d, ok := rec.digest(m.FilePath())
		if !ok && base != nil {
			d, ok = base.manifests[pathKey(m.FilePath())]
		}
		if !ok {
			return DigestIndex{}, fmt.Errorf("snapshot %d: manifest %s is neither written by this commit nor one of the snapshot it replaces", s.SnapshotID, m.FilePath())
		}
		d.Path = m.FilePath()
		idx.Manifests = append(idx.Manifests, d)
	}
	slices.SortFunc(idx.Manifests, func(a, b FileDigest) int { return strings.Compare(a.Path, b.Path) })
	return idx, nil
}

// propertyUpdates returns the updates that turn table properties old into
// next.
func propertyUpdates(old, next iceberg.Properties) []table.Update {
	set := iceberg.Properties{}
	var removed []string
	for k, v := range next {
		if ov, ok := old[k]; !ok || ov != v {
			set[k] = v
		}
	}
	for k := range old {
		if _, ok := next[k]; !ok {
			removed = append(removed, k)
		}
	}
	var out []table.Update
	if len(set) > 0 {
		out = append(out, table.NewSetPropertiesUpdate(set))
	}
	if len(removed) > 0 {
		slices.Sort(removed)
		out = append(out, table.NewRemovePropertiesUpdate(removed))
	}
	return out
}

// settle decides what a failed commit leaves behind. It re-reads the table,
// because a commit can fail after it landed: then the metadata is returned
// and the commit counts. Otherwise the files are deleted if the failure says
// for certain that nothing landed, and kept if the commit may still land.
func (c *Tier) settle(ctx context.Context, h *Table, op string, rec *recordingFS, id string, cause error) (table.Metadata, error) {
	cause = fmt.Errorf("cold: %s %s: commit: %w", op, h.decl.Name, cause)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	cur, err := c.cat.LoadTable(ctx, h.ident)
	if err != nil {
		c.log.Warn("cold: the outcome of a failed commit is unknown; its files are kept", "table", h.decl.Name, "files", len(rec.created()), "err", err)
		return nil, fmt.Errorf("%w (re-reading the table failed too, so its %d files are kept: %v)", cause, len(rec.created()), err)
	}
	if findCommit(cur.Metadata(), id) != nil {
		c.log.Warn("cold: a commit that reported a failure landed", "table", h.decl.Name, "op", op, "err", cause)
		return cur.Metadata(), nil
	}
	if !definite(cause) {
		c.log.Warn("cold: a failed commit may still land; its files are kept", "table", h.decl.Name, "files", len(rec.created()), "err", cause)
		return nil, fmt.Errorf("%w (it has not landed, but may still: its %d files are kept)", cause, len(rec.created()))
	}
	return nil, c.discard(h, op, rec, cause)
}

// definite reports whether a commit failure means that the commit did not
// and will not land: a lost race, or a refusal of the commit check.
func definite(err error) bool {
	var missing *MissingAncestorError
	return errors.Is(err, table.ErrCommitFailed) || errors.Is(err, ErrWatermarkBackwards) ||
		errors.Is(err, ErrWindowArchived) || errors.As(err, &missing)
}

// discard deletes the files rec created and returns cause, annotated if
// some of them could not be deleted.
func (c *Tier) discard(h *Table, op string, rec *recordingFS, cause error) error {
	removed, err := rec.removeAll()
	if err != nil {
		c.log.Warn("cold: files of a failed commit could not be removed", "table", h.decl.Name, "op", op, "err", err)
		return fmt.Errorf("%w (removing the files it wrote failed: %v)", cause, err)
	}
	if removed > 0 {
		c.log.Info("cold: removed the files of a failed commit", "table", h.decl.Name, "op", op, "files", removed)
	}
	return cause
}

// findCommit returns the snapshot of meta whose summary carries commit id.
func findCommit(meta table.Metadata, id string) *table.Snapshot {
	snaps := meta.Snapshots()
	for i := len(snaps) - 1; i >= 0; i-- {
		if s := &snaps[i]; s.Summary != nil && s.Summary.Properties[SummaryCommitID] == id {
			return s
		}
	}
	return nil
}
