package httpapi

// POST /v1/tables/{table}/readings: a delivery of readings, CSV or JSON
// lines as meterstore ingest reads them, streamed from the request body
// and written in atomic batches.
//
//	200  every reading stored: {"inserted","present","late","batches"}
//	403  the token lacks scope ingest, or lists tables without this one
//	404  no such table
//	413  the body passed server.max_body_bytes (code too_large)
//	415  a Content-Type other than text/csv, application/x-ndjson,
//	     application/jsonl or application/EDIFACT (code unsupported_media_type)
//	422  a batch refused, nothing of it written (code refused): "line",
//	     the first bad line, and "lines", each {"line","reason"}
//	503  worth retrying unchanged (code unavailable), with Retry-After
//
// The header X-MeterStore-Source or the query parameter source names the
// delivery; a table with provenance columns records it in source_ref and
// "api" in source_kind (an MSCONS interchange records "mscons" and
// "<UNB reference>:<UNH reference>" instead). It and substitute_by are
// sent at most once (else 400, code bad_request), each 1 to 1024 bytes of
// UTF-8 without control characters (else 422, code refused, naming it),
// checked before the body is read (ingestoptions.go).
//
// With an Idempotency-Key header, a retry of a request that ended 200 or
// 422 is answered with that answer again instead of being run, and more
// (see idempotency.go):
//
//	400  a malformed key (code bad_request)
//	409  a request with the key is still in flight (code in_flight)
//	422  the key was used for another body (code idempotency_key_reused)
//
// An application/EDIFACT body is an MSCONS interchange, written a message
// at a time (see mscons.go): 200 when every message is stored, 422 when
// some are refused; "messages" reports each.
//
// Every answer after the first batch was read carries the counts of the
// batches written and "written_through_line", the last line they hold:
// they stay written, and sending the same body again is safe, since
// redelivering a written reading is a no-op.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/idempotency"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/edifact"
	"github.com/meterstore/meterstore/internal/ingest"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

// ingestPath is the route of an ingest.
const ingestPath = "/v1/tables/{table}/readings"

// sourceHeader names the delivery in the table's provenance column
// source_ref; the query parameter source says the same and wins.
const sourceHeader = "X-MeterStore-Source"

// retryAfterSeconds is the Retry-After of a 503 from an ingest.
const retryAfterSeconds = 5

// maxLinesReported bounds the lines a 422 names.
const maxLinesReported = 100

// routeIngest registers the ingest route, and a 405 for its path asked
// with another method.
func (h *handler) routeIngest() {
	h.mux.Handle("POST "+ingestPath, h.guard([]string{config.ScopeIngest}, h.ingest))
	h.mux.HandleFunc(ingestPath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s takes POST, not %s", r.URL.Path, r.Method))
	})
}

// ingestCounts are the batches an ingest wrote.
type ingestCounts struct {
	Inserted int `json:"inserted"`
	Present  int `json:"present"`
	Late     int `json:"late"`
	Batches  int `json:"batches"`
	// Superseded and Shadowed count readings stored beside other
	// versions of their merge key (series.Status); Refused counts the
	// readings of refused batches or messages.
	Superseded int `json:"superseded"`
	Shadowed   int `json:"shadowed"`
	Refused    int `json:"refused"`
	// Messages reports each message of an MSCONS interchange.
	Messages []messageReport `json:"messages,omitempty"`
}

// ingestError is the body of an ingest that stopped after reading began.
type ingestError struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	// Line is the first offending line, when the refusal names lines.
	Line         *int         `json:"line,omitempty"`
	Lines        []lineReason `json:"lines,omitempty"`
	LinesOmitted int          `json:"lines_omitted,omitempty"`
	// WrittenThroughLine is the last line of the last batch written; 0
	// when none was.
	WrittenThroughLine int `json:"written_through_line"`
	ingestCounts
}

// lineReason is one offending line of a refused batch.
type lineReason struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

func (h *handler) ingest(w http.ResponseWriter, r *http.Request) {
	table := r.PathValue("table")
	tok, _ := r.Context().Value(tokenKey{}).(config.Token)
	decl, ok := h.touch(w, r, tok, table)
	if !ok {
		return
	}
	format, err := bodyFormat(r.Header.Get("Content-Type"))
	if err != nil {
		writeError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", err.Error())
		return
	}
	key, err := idempotencyKey(r.Header)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	opts, oerr := ingestOptions(r) // ingestoptions.go
	if oerr != nil {
		writeError(w, oerr.status, oerr.code, oerr.msg)
		return
	}
	run := func(body io.Reader) ingestAnswer {
		return h.runIngest(r.Context(), tok.Name, table, &decl, format, body, opts)
	}
	if key != "" {
		h.ingestOnce(w, r, idempotency.Key{Token: tok.Name, Key: key, Table: table}, optionsPrefix(opts), run) // idempotency.go
		return
	}
	run(r.Body).write(w)
}

// ingestAnswer is the answer to an ingest: its status and JSON body.
type ingestAnswer struct {
	status int
	body   any
}

func (a ingestAnswer) write(w http.ResponseWriter) {
	if a.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	}
	writeJSON(w, a.status, a.body)
}

// runIngest writes the delivery body to table in batches and returns the
// answer.
func (h *handler) runIngest(ctx context.Context, token, table string, decl *series.Table, format ingest.Format, body io.Reader, opts store.WriteOptions) ingestAnswer {
	write := func(ctx context.Context, rows []series.Reading) ([]series.Status, int, error) {
		res, err := h.s.WriteWith(ctx, table, rows, opts)
		return res.Status, res.Late, err
	}
	// The next batch is decoded and prepared while one is written.
	stream := func(ctx context.Context, next func() ([]series.Reading, error), done func([]series.Status, int, error) error) error {
		return h.s.WriteEach(ctx, table, next, func(res store.WriteResult, err error) error {
			return done(res.Status, res.Late, err)
		}, opts)
	}
	if format == ingest.MSCONS {
		return h.runMSCONS(ctx, token, table, decl, body, write, stream)
	}
	var sum ingest.Summary
	dec, err := ingest.NewDecoder(body, format, decl)
	if err == nil {
		sum, err = ingest.RunStream(ctx, dec, stream, ingest.Options{BatchRows: h.batchRows})
	}
	counts := ingestCounts{Inserted: sum.Inserted, Present: sum.Present, Late: sum.Late, Batches: sum.Batches,
		Superseded: sum.Superseded, Shadowed: sum.Shadowed, Refused: sum.Refused}
	attrs := []slog.Attr{slog.String("token", token), slog.String("table", table),
		slog.Int("inserted", sum.Inserted), slog.Int("present", sum.Present), slog.Int("late", sum.Late),
		slog.Int("superseded", sum.Superseded), slog.Int("shadowed", sum.Shadowed), slog.Int("refused_readings", sum.Refused),
		slog.Int("batches", sum.Batches), slog.Int("through_line", sum.Through)}
	if err != nil {
		attrs = append(attrs, slog.Any("err", err))
	}
	h.log.LogAttrs(ctx, slog.LevelInfo, "ingest", attrs...)
	if err == nil {
		return ingestAnswer{http.StatusOK, counts}
	}
	status, eb := ingestFailure(err)
	eb.WrittenThroughLine, eb.ingestCounts = sum.Through, counts
	if sum.Through > 0 {
		eb.Error = fmt.Sprintf("lines up to %d are written; %s", sum.Through, eb.Error)
	}
	return ingestAnswer{status, eb}
}

// ingestFailure classifies the error that stopped an ingest, of any
// format: CSV and JSON lines, or an MSCONS interchange (whose failure past
// its first message is a *pastFirstMessage).
func ingestFailure(err error) (int, ingestError) {
	var (
		tooLarge *http.MaxBytesError
		past     *pastFirstMessage
		envelope *edifact.SyntaxError
		be       *ingest.BatchError
		le       *ingest.LineError
		se       *series.Error
	)
	switch {
	case errors.As(err, &envelope) || errors.Is(err, edifact.ErrNotEDIFACT):
		// An interchange's envelope: nothing was written.
		return http.StatusUnprocessableEntity, ingestError{Code: "refused", Error: err.Error()}
	case errors.As(err, &tooLarge):
		return http.StatusRequestEntityTooLarge, ingestError{Code: "too_large",
			Error: fmt.Sprintf("the body is larger than server.max_body_bytes, %d bytes", tooLarge.Limit)}
	case store.IsRetryable(err):
		return http.StatusServiceUnavailable, ingestError{Code: "unavailable", Error: err.Error()}
	case errors.As(err, &past):
		// A failure that is not the body's.
		return http.StatusInternalServerError, ingestError{Code: "internal", Error: err.Error()}
	case errors.As(err, &be) && len(be.Lines) > 0:
		body := ingestError{Code: "refused", Error: fmt.Sprintf("the batch of lines %d-%d is not written: %d lines refused",
			be.FirstLine, be.LastLine, len(be.Lines))}
		for _, l := range be.Lines {
			if len(body.Lines) == maxLinesReported {
				body.LinesOmitted++
				continue
			}
			body.Lines = append(body.Lines, lineReason{Line: l.Line, Reason: reason(l)})
		}
		body.Line = &body.Lines[0].Line
		return http.StatusUnprocessableEntity, body
	case errors.As(err, &be) && errors.As(err, &se) && (se.Kind == store.InvalidInput || se.Kind == store.IntegrityViolation):
		// Refused as a whole, naming no line.
		return http.StatusUnprocessableEntity, ingestError{Code: "refused", Error: err.Error()}
	case errors.As(err, &le):
		// The CSV header: nothing was read past it.
		line := le.Line
		return http.StatusUnprocessableEntity, ingestError{Code: "refused", Error: "the delivery is not written: " + le.Error(),
			Line: &line, Lines: []lineReason{{Line: le.Line, Reason: reason(le)}}}
	case errors.As(err, &be):
		return http.StatusInternalServerError, ingestError{Code: "internal", Error: err.Error()}
	}
	// Not a batch: the body could not be read.
	return http.StatusBadRequest, ingestError{Code: "bad_request", Error: "reading the body: " + err.Error()}
}

// pastFirstMessage is the failure of an MSCONS interchange after its
// first message was reported: the body was readable, so a failure neither
// worth retrying nor the body's size is the server's.
type pastFirstMessage struct{ err error }

func (e *pastFirstMessage) Error() string { return e.err.Error() }
func (e *pastFirstMessage) Unwrap() error { return e.err }

// reason is a line's error without its line number.
func reason(l *ingest.LineError) string {
	if l.Column == "" {
		return l.Err.Error()
	}
	return l.Column + ": " + l.Err.Error()
}

// bodyFormat is the format of a delivery of Content-Type ct.
func bodyFormat(ct string) (ingest.Format, error) {
	const want = "want text/csv, application/x-ndjson, application/jsonl or application/EDIFACT"
	if ct == "" {
		return 0, errors.New("no Content-Type: " + want)
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return 0, fmt.Errorf("Content-Type %q: %v; %s", ct, err, want)
	}
	// An interchange names its character set in UNB.
	if mt == "application/edifact" {
		return ingest.MSCONS, nil
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "us-ascii") {
		return 0, fmt.Errorf("Content-Type %q: a delivery is UTF-8", ct)
	}
	switch mt {
	case "text/csv":
		return ingest.CSV, nil
	case "application/x-ndjson", "application/jsonl":
		return ingest.JSONLines, nil
	}
	return 0, fmt.Errorf("Content-Type %q: %s", ct, want)
}

// internal answers 500 and logs why.
func (h *handler) internal(w http.ResponseWriter, r *http.Request, err error) {
	h.log.LogAttrs(r.Context(), slog.LevelError, "request failed", slog.String("method", r.Method),
		slog.String("path", r.URL.Path), slog.Any("err", err))
	writeError(w, http.StatusInternalServerError, "internal", "internal error")
}
