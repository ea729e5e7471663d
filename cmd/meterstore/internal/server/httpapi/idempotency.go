package httpapi

// The Idempotency-Key of an ingest. Redelivering readings is already a
// no-op, so a key does not make a retry safe, it makes it informative: a
// client whose connection broke after sending a delivery gets the answer
// the delivery had (the counts inserted, or the lines refused) instead of
// "every reading already present".
//
// Records live in PostgreSQL (package idempotency), keyed by the
// token's name, the key and the table, so they survive a restart and are
// shared by every serve process on the database. Only final answers are
// recorded, 200 and 422; any other leaves the key to be retried. A request
// holds its key under a lease it renews while it runs, so a process killed
// mid-request blocks the key for one lease, not forever.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/idempotency"
	"github.com/meterstore/meterstore/store"
)

const (
	// idempotencyHeader names the key of a request.
	idempotencyHeader = "Idempotency-Key"
	// replayedHeader marks an answer given again from its record.
	replayedHeader = "Idempotent-Replayed"
	// maxKeyLength bounds a key, in bytes.
	maxKeyLength = 255
	// idempotencyLease is how long a request holds its key without
	// renewing it, and so how long a key stays in flight after its
	// process died; it is renewed every third of it.
	idempotencyLease = 30 * time.Second
	// pruneEvery spaces the deletions of expired records.
	pruneEvery = time.Minute
	// recordTimeout bounds recording an outcome after the request's
	// context may have ended.
	recordTimeout = 10 * time.Second
)

// DefaultIdempotencyRetention is how long an outcome is kept when
// Options.IdempotencyRetention is zero.
const DefaultIdempotencyRetention = 24 * time.Hour

// idempotencyKey returns the request's key, "" if it has none, or why it
// is malformed.
func idempotencyKey(hdr http.Header) (string, error) {
	vs := hdr.Values(idempotencyHeader)
	switch {
	case len(vs) == 0:
		return "", nil
	case len(vs) > 1:
		return "", fmt.Errorf("%d %s headers: send one", len(vs), idempotencyHeader)
	}
	k := vs[0]
	if len(k) == 0 || len(k) > maxKeyLength {
		return "", fmt.Errorf("%s of %d bytes: want 1 to %d visible ASCII characters", idempotencyHeader, len(k), maxKeyLength)
	}
	for i := range len(k) {
		if k[i] < '!' || k[i] > '~' {
			return "", fmt.Errorf("%s: byte %d is %q: want visible ASCII characters only", idempotencyHeader, i+1, k[i])
		}
	}
	return k, nil
}

// optionsPrefix returns what precedes the body in the hash a retry is
// compared with: the options that change what a delivery writes
// (substitute_by, the source recorded), so that the same body sent under
// the key with other options is another request. A request without them
// hashes its body alone, as before there were any, so that the records
// made then still answer their retries.
func optionsPrefix(o store.WriteOptions) []byte {
	if o.By == "" && o.Source.Ref == "" {
		return nil
	}
	return fmt.Appendf(nil, "meterstore ingest options\x00substitute_by=%s\x00source=%s\x00", o.By, o.Source.Ref)
}

// ingestOnce runs an ingest under the key k: it answers a retry of a
// request that ended with the recorded answer, and runs any other. prefix
// is hashed before the body (optionsPrefix).
func (h *handler) ingestOnce(w http.ResponseWriter, r *http.Request, k idempotency.Key, prefix []byte, run func(io.Reader) ingestAnswer) {
	ctx := r.Context()
	claim, done, err := h.records.Claim(ctx, k, h.o.Clock(), idempotencyLease, h.retention)
	switch {
	case errors.Is(err, idempotency.ErrInFlight):
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
		writeError(w, http.StatusConflict, "in_flight",
			fmt.Sprintf("a request with %s %q is in flight: retry once it has ended", idempotencyHeader, k.Key))
		return
	case store.IsRetryable(err):
		h.log.LogAttrs(ctx, slog.LevelWarn, "idempotency key unavailable", slog.String("token", k.Token), slog.Any("err", err))
		ingestAnswer{http.StatusServiceUnavailable, apiError{Code: "unavailable", Error: err.Error()}}.write(w)
		return
	case err != nil:
		h.internal(w, r, err)
		return
	case done != nil:
		h.replay(w, r, k, prefix, done)
		return
	}

	// The key is ours: run the request, hashing its body as it streams.
	sum := sha256.New()
	sum.Write(prefix)
	stop := h.keepLease(ctx, claim)
	a := run(io.TeeReader(r.Body, sum))
	stop()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	final := a.status == http.StatusOK || a.status == http.StatusUnprocessableEntity
	if final {
		// A refused batch stops the reading; the rest of the body
		// belongs to the hash that a retry's is compared with.
		if _, err := io.Copy(sum, r.Body); err != nil {
			h.log.LogAttrs(ctx, slog.LevelWarn, "idempotency: the rest of the body is unreadable; the answer is not recorded",
				slog.String("token", k.Token), slog.String("table", k.Table), slog.Any("err", err))
			final = false
		}
	}
	if !final {
		if err := claim.Release(rctx); err != nil {
			h.log.LogAttrs(ctx, slog.LevelWarn, "idempotency: the key stays in flight until its lease ends",
				slog.String("token", k.Token), slog.Any("err", err))
		}
		a.write(w)
		return
	}
	b, err := json.Marshal(a.body)
	if err != nil {
		h.internal(w, r, err)
		return
	}
	b = append(b, '\n')
	o := idempotency.Outcome{Status: a.status, Body: b, At: h.o.Clock()}
	sum.Sum(o.BodySHA256[:0])
	// Recorded before it is answered: a crash in between leaves a
	// record a retry is answered with, never an answer without one.
	if err := claim.Complete(rctx, o); err != nil {
		h.log.LogAttrs(ctx, slog.LevelWarn, "idempotency: the answer is not recorded; a retry runs again",
			slog.String("token", k.Token), slog.Any("err", err))
		claim.Release(rctx) // a lease that is lost or unreachable ends alone
	} else {
		h.prune(rctx)
	}
	writeJSONBytes(w, a.status, b)
}

// replay answers a retry with the recorded outcome done, once its body
// proves to be the same.
func (h *handler) replay(w http.ResponseWriter, r *http.Request, k idempotency.Key, prefix []byte, done *idempotency.Outcome) {
	sum := sha256.New()
	sum.Write(prefix)
	if _, err := io.Copy(sum, r.Body); err != nil {
		status, body := ingestFailure(err)
		ingestAnswer{status, body}.write(w)
		return
	}
	if !bytes.Equal(sum.Sum(nil), done.BodySHA256[:]) {
		writeError(w, http.StatusUnprocessableEntity, "idempotency_key_reused",
			fmt.Sprintf("%s %q was used for another body or other options (substitute_by, source) at %s: send a new delivery under a new key",
				idempotencyHeader, k.Key, done.At.UTC().Format(time.RFC3339)))
		return
	}
	h.log.LogAttrs(r.Context(), slog.LevelInfo, "ingest replayed", slog.String("token", k.Token), slog.String("table", k.Table),
		slog.Int("status", done.Status), slog.Time("recorded", done.At))
	w.Header().Set(replayedHeader, "true")
	writeJSONBytes(w, done.Status, done.Body)
}

// keepLease renews c's lease while the request runs; the function it
// returns stops it.
func (h *handler) keepLease(ctx context.Context, c claim) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(idempotencyLease / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				// A renewal that fails lets the lease run out: a retry
				// may then run beside this request, which costs a second
				// delivery of the same readings, a no-op.
				if err := c.Extend(ctx, h.o.Clock().Add(idempotencyLease)); err != nil && ctx.Err() == nil {
					h.log.Warn("idempotency: the lease is not renewed", "err", err)
				}
			}
		}
	}()
	return func() { cancel(); <-stopped }
}

// prune deletes the records past retention, at most once every
// pruneEvery of the handler's clock.
func (h *handler) prune(ctx context.Context) {
	now := h.o.Clock()
	last := h.pruned.Load()
	if now.UnixNano()-last < int64(pruneEvery) || !h.pruned.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	n, err := h.records.Prune(ctx, now.Add(-h.retention))
	if err != nil {
		h.log.Warn("idempotency: pruning expired records", "err", err)
		return
	}
	if n > 0 {
		h.log.Debug("idempotency: pruned expired records", "records", n)
	}
}

// writeJSONBytes answers with b, a JSON document as writeJSON writes one.
func writeJSONBytes(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b) // the status is sent; a failed write has no one to tell
}
