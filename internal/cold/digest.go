package cold

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// Keys of the snapshot summary that lead to the digests of a table's data
// files. Every snapshot the Tier commits carries them once a table has a
// digest index: a commit that adds or removes data files writes a new
// index, one that does not names its parent's. So the current snapshot
// always leads to the digest of every live data file the Tier wrote,
// whatever snapshots expired before it.
const (
	// SummaryDigests is the location of the digest index: a JSON object
	// (see DigestIndex) naming, for each live data file of the snapshot
	// that the Tier wrote or adopted, its size and SHA-256.
	SummaryDigests = "meterstore.digests"
	// SummaryDigestsSHA256 is the SHA-256 of the digest index's bytes, in
	// hex: the snapshot commits the index, and the index each file.
	SummaryDigestsSHA256 = "meterstore.digests-sha256"
	// SummaryDigestsFiles is the number of files the index names.
	SummaryDigestsFiles = "meterstore.digests-files"
	// SummaryDigestsAdopted is the number of files whose digests the
	// commit adopted (see AdoptDigests) rather than computed as it wrote
	// them.
	SummaryDigestsAdopted = "meterstore.digests-adopted"
)

// DigestFormat is the format of a digest index, its "format" member.
const DigestFormat = "meterstore.digests/1"

// ErrAltered is wrapped by every report of a data file that is not the
// file its commit recorded (see AlteredFileError), and of a digest index
// that is not the one its snapshot committed. Such a file is never read.
var ErrAltered = errors.New("a data file is not the one its commit recorded")

// An AlteredFileError reports a data file that is not the file its commit
// recorded: of another size, row count or SHA-256, or found so before by a
// verification. It wraps ErrAltered and is not retryable.
type AlteredFileError struct {
	Table  string
	File   string // its location, as the manifest records it
	Reason string // what differs
	// ByDigest tells that only the file's SHA-256 differs, which only a
	// deep verification, reading the file whole, sees.
	ByDigest bool
	// Metadata tells that File is no data file but what vouches for them
	// all (a digest index, a metadata file): none of the table's files
	// can be proven while it is altered.
	Metadata bool
}

// Error names the table, the file and what differs.
func (e *AlteredFileError) Error() string {
	if e.Metadata {
		return fmt.Sprintf("cold: %s: %s, which vouches for the data files, is not the file its commit recorded, so no data file is read: %s", e.Table, e.File, e.Reason)
	}
	return fmt.Sprintf("cold: %s: data file %s is not the file its commit recorded, so it is not read: %s", e.Table, e.File, e.Reason)
}

// Unwrap returns ErrAltered.
func (e *AlteredFileError) Unwrap() error { return ErrAltered }

// IsRetryable reports false: the file stays altered until an operator
// restores it.
func (e *AlteredFileError) IsRetryable() bool { return false }

// A DigestIndex is the content of the object SummaryDigests names.
type DigestIndex struct {
	Format string `json:"format"` // DigestFormat
	// Files are sorted by Path.
	Files []FileDigest `json:"files"`
}

// A FileDigest is what a commit recorded of one data file.
type FileDigest struct {
	Path   string `json:"path"` // the location, as the manifest records it
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"` // hex
	// Adopted marks a digest computed after the fact (AdoptDigests) of a
	// file written before the Tier recorded digests, rather than while
	// the file was written.
	Adopted bool `json:"adopted,omitempty"`
}

// digests are the recorded digests of a snapshot's files, by path key (see
// pathKey).
type digests struct {
	loc   string // the index they come from; "" when no snapshot has one
	sum   string // its SHA-256, as the summary records it
	files map[string]FileDigest
}

// of returns the digest recorded for the file at loc.
func (d digests) of(loc string) (FileDigest, bool) {
	f, ok := d.files[pathKey(loc)]
	return f, ok
}

// digestCarrier returns the snapshot whose digest index s uses: s or, when
// a foreign engine committed s, its nearest ancestor carrying
// SummaryDigests; nil if there is none (or a parent is missing before one).
func digestCarrier(meta table.Metadata, s *table.Snapshot) *table.Snapshot {
	for range len(meta.Snapshots()) + 1 {
		if s == nil {
			return nil
		}
		if s.Summary != nil && s.Summary.Properties[SummaryDigests] != "" {
			return s
		}
		if s.ParentSnapshotID == nil {
			return nil
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return nil
}

// readDigests returns the digests snapshot s of meta leads to, none if no
// snapshot carries an index. An index that is gone, unreadable or not the
// one the snapshot committed is an error; the last wraps ErrAltered.
func readDigests(fs icebergio.IO, meta table.Metadata, s *table.Snapshot) (digests, error) {
	c := digestCarrier(meta, s)
	if c == nil {
		return digests{files: map[string]FileDigest{}}, nil
	}
	d, err := readDigestIndex(fs, c.Summary.Properties[SummaryDigests], c.Summary.Properties[SummaryDigestsSHA256])
	if err != nil {
		return digests{}, fmt.Errorf("%w (snapshot %d)", err, c.SnapshotID)
	}
	return d, nil
}

// readDigestIndex reads the digest index at loc, whose SHA-256 a snapshot
// committed as sum.
func readDigestIndex(fs icebergio.IO, loc, sum string) (digests, error) {
	d := digests{loc: loc, sum: sum}
	data, err := readFile(fs, loc)
	if err != nil {
		return digests{}, fmt.Errorf("digest index %s: %w", loc, err)
	}
	if got := sha256Hex(data); got != sum {
		return digests{}, fmt.Errorf("%w: digest index %s has SHA-256 %s, its snapshot committed %s", ErrAltered, loc, got, sum)
	}
	var idx DigestIndex
	if err := json.Unmarshal(data, &idx); err != nil {
		return digests{}, fmt.Errorf("digest index %s: %w", loc, err)
	}
	if idx.Format != DigestFormat {
		return digests{}, fmt.Errorf("digest index %s: format %q, want %q", loc, idx.Format, DigestFormat)
	}
	d.files = make(map[string]FileDigest, len(idx.Files))
	for _, f := range idx.Files {
		d.files[pathKey(f.Path)] = f
	}
	return d, nil
}

// nextDigests returns the index of a snapshot that removes the files
// removed and adds those of added on top of base, with their digests.
func nextDigests(base digests, removed []iceberg.DataFile, added []FileDigest) DigestIndex {
	files := make(map[string]FileDigest, len(base.files)+len(added))
	for k, f := range base.files {
		files[k] = f
	}
	for _, f := range removed {
		delete(files, pathKey(f.FilePath()))
	}
	for _, f := range added {
		files[pathKey(f.Path)] = f
	}
	idx := DigestIndex{Format: DigestFormat, Files: make([]FileDigest, 0, len(files))}
	for _, f := range files {
		idx.Files = append(idx.Files, f)
	}
	slices.SortFunc(idx.Files, func(a, b FileDigest) int { return strings.Compare(a.Path, b.Path) })
	return idx
}

// writeDigests writes idx under the table's metadata directory at loc,
// for commit id, through fs, and sets the summary keys that name it.
func writeDigests(fs icebergio.WriteFileIO, loc, id string, idx DigestIndex, summary iceberg.Properties) error {
	data, err := json.Marshal(idx)
	if err != nil {
		return err
	}
	path := strings.TrimSuffix(loc, "/") + "/metadata/digests-" + id + ".json"
	if err := fs.WriteFile(path, data); err != nil {
		return fmt.Errorf("write digest index %s: %w", path, err)
	}
	summary[SummaryDigests] = path
	summary[SummaryDigestsSHA256] = sha256Hex(data)
	summary[SummaryDigestsFiles] = strconv.Itoa(len(idx.Files))
	return nil
}

// carryDigests copies the keys that name the index of base into summary,
// for a snapshot that adds and removes no data file.
func carryDigests(base digests, summary iceberg.Properties) {
	if base.loc == "" {
		return
	}
	summary[SummaryDigests] = base.loc
	summary[SummaryDigestsSHA256] = base.sum
	summary[SummaryDigestsFiles] = strconv.Itoa(len(base.files))
}

func sha256Hex(p []byte) string {
	sum := sha256.Sum256(p)
	return hex.EncodeToString(sum[:])
}

// hashFile returns the size and SHA-256 of the file at loc, read whole.
func hashFile(fs icebergio.IO, loc string) (int64, string, error) {
	f, err := fs.Open(loc)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	return hashReader(loc, f)
}

func hashReader(name string, r io.Reader) (int64, string, error) {
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return 0, "", fmt.Errorf("read %s: %w", name, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// checkDigest compares the file at loc, read whole, with its recorded
// digest; a difference is an *AlteredFileError.
func checkDigest(fs icebergio.IO, name, loc string, want FileDigest) error {
	n, sum, err := hashFile(fs, loc)
	return compareDigest(name, loc, want, n, sum, err)
}

// compareDigest compares size n and SHA-256 sum, read from the file at loc
// with err, with the digest recorded of it.
func compareDigest(name, loc string, want FileDigest, n int64, sum string, err error) error {
	switch {
	case err != nil:
		return err
	case n != want.Size:
		return &AlteredFileError{Table: name, File: loc, Reason: fmt.Sprintf("it has %d bytes, its commit recorded %d", n, want.Size)}
	case sum != want.SHA256:
		return &AlteredFileError{Table: name, File: loc, Reason: fmt.Sprintf("its SHA-256 is %s, its commit recorded %s", sum, want.SHA256), ByDigest: true}
	}
	return nil
}

// A hashingWriter computes the SHA-256 and size of what is written through
// it, and hands them over when the file is closed intact.
type hashingWriter struct {
	icebergio.FileWriter
	h    hash.Hash
	n    int64
	done func(size int64, sum string)
}

func (w *hashingWriter) Write(p []byte) (int, error) {
	n, err := w.FileWriter.Write(p)
	w.h.Write(p[:n])
	w.n += int64(n)
	return n, err
}

// ReadFrom copies through Write, so that every byte is hashed.
func (w *hashingWriter) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{w}, r)
}

func (w *hashingWriter) Close() error {
	if err := w.FileWriter.Close(); err != nil {
		return err
	}
	w.done(w.n, hex.EncodeToString(w.h.Sum(nil)))
	return nil
}
