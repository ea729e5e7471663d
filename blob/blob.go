// Package blob stores immutable objects under string keys, on a local
// filesystem or in a cloud object store, and offers the one primitive a
// serverless commit protocol needs: an atomic PutIfAbsent.
//
// Open a Bucket by URL:
//
//	file:///var/lib/meterstore   local directory (must exist)
//	s3://bucket?region=eu-central-1
//	s3://bucket?endpoint=http://127.0.0.1:7070&region=us-east-1&use_path_style=true
//	gs://bucket
//	azblob://container
//	mem://                         in-process, for tests
//
// Keys are slash-separated paths such as "shard-1/00000000000000000042". The
// same rules apply on every backend, so data can move between them: see
// [ErrInvalidKey].
package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

var (
	// ErrNotFound is returned by Get when no object is stored under the key.
	ErrNotFound = errors.New("object not found")

	// ErrExists is returned by PutIfAbsent when the key already holds
	// different data.
	ErrExists = errors.New("object already exists")

	// ErrInvalidKey is returned for a key that is empty, longer than 1024
	// bytes, not valid UTF-8, or that contains a control character, a
	// backslash, an empty segment ("a//b", "/a", "a/"), a "." or ".."
	// segment, or a segment starting with ".tmp-" (reserved for the
	// local driver's temporary files).
	ErrInvalidKey = errors.New("invalid key")
)

// DefaultListLimit is the page size List uses when ListOptions.Limit is not
// positive.
const DefaultListLimit = 1000

// A Bucket is a flat collection of objects addressed by key. It is safe for
// concurrent use by multiple goroutines and, for every driver but mem://, by
// multiple processes.
type Bucket struct {
	d driver
	// retried is set for drivers whose puts may be retried below us (cloud
	// SDKs), where "exists" may mean our own earlier attempt. The local and
	// memory drivers answer once, so their "exists" is final.
	retried bool
}

// driver is what a backend implements. Keys are already validated; errors
// need no context, the Bucket adds it.
type driver interface {
	get(ctx context.Context, key string) ([]byte, error)
	// putIfAbsent returns ErrExists if key holds anything, even data.
	putIfAbsent(ctx context.Context, key string, data []byte) error
	// list returns up to n objects whose keys start with prefix and sort
	// after startAfter, in key order.
	list(ctx context.Context, prefix, startAfter string, n int) ([]Object, error)
	// put stores data under key, replacing any object atomically.
	put(ctx context.Context, key string, data []byte) error
	// delete succeeds if key does not exist.
	delete(ctx context.Context, key string) error
	close() error
}

// Object describes a stored object.
type Object struct {
	Key  string
	Size int64 // in bytes
}

// ListOptions selects a page of a listing.
type ListOptions struct {
	// StartAfter restricts the listing to keys that sort after it. To get the
	// next page, pass the Next of the previous one.
	StartAfter string
	// Limit is the maximum number of objects on the page; if it is not
	// positive, DefaultListLimit.
	Limit int
}

// ListPage is one page of a listing.
type ListPage struct {
	Objects []Object
	// Next is the StartAfter of the following page, or "" if this page is
	// the last.
	Next string
}

// Get returns the data stored under key. If there is none, the error
// matches ErrNotFound.
func (b *Bucket) Get(ctx context.Context, key string) ([]byte, error) {
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("blob: get %q: %w", key, err)
	}
	data, err := b.d.get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("blob: get %s: %w", key, err)
	}
	return data, nil
}

// PutIfAbsent stores data under key if no object exists there. Of any
// number of concurrent writers of one key, across processes and machines,
// exactly one succeeds and the others get an error matching ErrExists;
// readers see either no object or all of it.
//
// On cloud stores, if the key already holds exactly data, PutIfAbsent
// succeeds: a write that was retried, by this package or inside a cloud SDK,
// cannot otherwise tell its own earlier attempt from a rival's. A caller that
// must know whether it won, rather than that its data is stored, therefore
// puts a unique write id into data. Any error other than ErrExists leaves
// the outcome unknown; Get tells.
func (b *Bucket) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("blob: put %q: %w", key, err)
	}
	err := b.d.putIfAbsent(ctx, key, data)
	if errors.Is(err, ErrExists) && b.retried {
		err = compareStored(ctx, b.d, key, data)
	}
	if err != nil {
		return fmt.Errorf("blob: put %s: %w", key, err)
	}
	return nil
}

// Put stores data under key, replacing whatever is there. Readers see the
// old object or the new one, never a mix. It is for data that may be
// rewritten, such as a hint for foreign readers; commits use PutIfAbsent.
func (b *Bucket) Put(ctx context.Context, key string, data []byte) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("blob: put %q: %w", key, err)
	}
	if err := b.d.put(ctx, key, data); err != nil {
		return fmt.Errorf("blob: put %s: %w", key, err)
	}
	return nil
}

// compareStored returns nil if key holds exactly data and ErrExists if it
// holds something else. When it cannot read the object it returns an error
// that is neither, for then nobody knows whose object it is.
func compareStored(ctx context.Context, d driver, key string, data []byte) error {
	stored, err := d.get(ctx, key)
	switch {
	case err != nil:
		return fmt.Errorf("key exists, but reading it back failed, so the outcome is unknown: %v", err)
	case bytes.Equal(stored, data):
		return nil
	default:
		return ErrExists
	}
}

// List returns the objects whose keys start with prefix, in lexicographic
// (byte-wise) key order, one page at a time. Objects written or deleted
// during a listing may or may not appear in it.
func (b *Bucket) List(ctx context.Context, prefix string, opts ListOptions) (ListPage, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	// One object beyond the page tells whether there is a next page
	// without a second round trip.
	objs, err := b.d.list(ctx, prefix, opts.StartAfter, limit+1)
	if err != nil {
		return ListPage{}, fmt.Errorf("blob: list %s: %w", prefix, err)
	}
	if len(objs) <= limit {
		return ListPage{Objects: objs}, nil
	}
	return ListPage{Objects: objs[:limit], Next: objs[limit-1].Key}, nil
}

// Delete removes the object stored under key. Deleting a key that holds no
// object is not an error, so that an interrupted cleanup can simply be
// repeated.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("blob: delete %q: %w", key, err)
	}
	if err := b.d.delete(ctx, key); err != nil {
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	return nil
}

// Close releases the resources of the Bucket. It does not wait for, or
// cancel, operations in flight.
func (b *Bucket) Close() error {
	if err := b.d.close(); err != nil {
		return fmt.Errorf("blob: close: %w", err)
	}
	return nil
}
