package cold

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
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

// DigestFormat is the format of the digest indexes the Tier writes, their
// "format" member. Format 2 pins a snapshot whole: its manifest list, each
// manifest and every live data file. Format 1, written before, names the
// data files the Tier wrote or adopted, and is still read.
const (
	DigestFormat  = "meterstore.digests/2"
	digestFormat1 = "meterstore.digests/1"
)

// ErrAltered is wrapped by every report of a data file that is not the
// file its commit recorded (see AlteredFileError), and of a digest index
// that is not the one its snapshot committed. Such a file is never read.
var ErrAltered = errors.New("a data file is not the one its commit recorded")

// ErrMissingFile is wrapped, beside ErrAltered, by the report of a data
// file a snapshot references that is gone.
var ErrMissingFile = errors.New("a data file its snapshot references is missing")

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
	// all (a digest index, a metadata file, a manifest list, a manifest):
	// none of the table's files can be proven while it is altered.
	Metadata bool
	// Missing tells that the data file is gone.
	Missing bool
}

// missingFile reports data file loc of table name as gone.
func missingFile(name, loc string) *AlteredFileError {
	return &AlteredFileError{Table: name, File: loc, Reason: "it is missing", Missing: true}
}

// Error names the table, the file and what differs.
func (e *AlteredFileError) Error() string {
	switch {
	case e.Metadata:
		return fmt.Sprintf("cold: %s: %s, which vouches for the data files, is not the file its commit recorded, so no data file is read: %s", e.Table, e.File, e.Reason)
	case e.Missing:
		return fmt.Sprintf("cold: %s: data file %s, which the current snapshot references, is missing, so the table cannot answer for its rows", e.Table, e.File)
	}
	return fmt.Sprintf("cold: %s: data file %s is not the file its commit recorded, so it is not read: %s", e.Table, e.File, e.Reason)
}

// Unwrap returns ErrAltered, and ErrMissingFile for a file that is gone.
func (e *AlteredFileError) Unwrap() []error {
	if e.Missing {
		return []error{ErrAltered, ErrMissingFile}
	}
	return []error{ErrAltered}
}

// IsRetryable reports false: the file stays altered until an operator
// restores it.
func (e *AlteredFileError) IsRetryable() bool { return false }

// A DigestIndex is the content of the object SummaryDigests names.
type DigestIndex struct {
	Format string `json:"format"` // DigestFormat
	// SnapshotID is the snapshot whose summary names the index (format 2).
	SnapshotID int64 `json:"snapshot_id,omitempty"`
	// Files are sorted by Path. In format 2 they are every live data file
	// of the snapshot, a file the Tier did not write (a foreign engine's)
	// with its size and row count and no SHA-256.
	Files []FileDigest `json:"files"`
	// ManifestList and Manifests pin the snapshot's manifest list and
	// every manifest it lists, sorted by Path (format 2): what a read
	// plans from is then the set of files the commit recorded.
	ManifestList *FileDigest  `json:"manifest_list,omitempty"`
	Manifests    []FileDigest `json:"manifests,omitempty"`
}

// A FileDigest is what a commit recorded of one data file.
type FileDigest struct {
	Path   string `json:"path"` // the location, as the manifest records it
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"` // hex; "" for a data file the Tier did not write
	// Records is a data file's row count as its manifest entry records
	// it (format 2).
	Records int64 `json:"records,omitempty"`
	// Adopted marks a digest computed after the fact (AdoptDigests) of a
	// file written before the Tier recorded digests, rather than while
	// the file was written.
	Adopted bool `json:"adopted,omitempty"`
}

// digests are the recorded digests of a snapshot's files, by path key (see
// pathKey).
type digests struct {
	loc    string // the index they come from; "" when no snapshot has one
	sum    string // its SHA-256, as the summary records it
	format string
	// snapshot is the snapshot the index pins whole (format 2), 0 if none.
	snapshot int64
	// files are the data files the index names, a digest's and (format
	// 2) the Tier's record of a foreign file alike.
	files map[string]FileDigest
	// list and manifests pin the manifest list and manifests of snapshot.
	list      *FileDigest
	manifests map[string]FileDigest
}

// of returns the digest recorded for the file at loc; ok is false for a
// file the index does not name or names without a SHA-256.
func (d digests) of(loc string) (FileDigest, bool) {
	f, ok := d.files[pathKey(loc)]
	return f, ok && f.SHA256 != ""
}

// pins reports whether the index pins snapshot id whole: its manifest list,
// its manifests and every live data file.
func (d digests) pins(id int64) bool { return d.list != nil && d.snapshot == id }

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
	if idx.Format != DigestFormat && idx.Format != digestFormat1 {
		return digests{}, fmt.Errorf("digest index %s: format %q, want %q", loc, idx.Format, DigestFormat)
	}
	d.format, d.snapshot, d.list = idx.Format, idx.SnapshotID, idx.ManifestList
	d.files = make(map[string]FileDigest, len(idx.Files))
	for _, f := range idx.Files {
		d.files[pathKey(f.Path)] = f
	}
	if idx.Format == DigestFormat {
		d.manifests = make(map[string]FileDigest, len(idx.Manifests))
		for _, m := range idx.Manifests {
			d.manifests[pathKey(m.Path)] = m
		}
	} else {
		d.snapshot, d.list = 0, nil
	}
	return d, nil
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
