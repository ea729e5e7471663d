package httpapi

// POST /v1/query: one read-only SQL statement over a table's readings in
// both tiers, as meterstore query runs it, its rows rendered as that
// command renders them (cmd/meterstore/internal/resultfmt).
//
//	body   {"table": "...", "sql": "..."}
//	Accept text/csv: a header row, then the rows;
//	       application/x-ndjson (also application/jsonl, */*, or no
//	       Accept): one JSON object per row, a repeated column name
//	       suffixed _2, _3, ...
//
//	200  the rows, with X-MeterStore-Watermark (RFC 3339, empty when the
//	     query read no archived watermark) and X-MeterStore-Tiers (the
//	     tiers read, comma-separated)
//	400  a malformed body (code bad_request), or not a single SELECT
//	     (code not_read_only)
//	403  the token lacks scope query, or lists tables without this one
//	404  no such table
//	406  an Accept this route cannot answer (code not_acceptable), Arrow
//	     streams among them for now
//	413  past query.max_rows or query.max_result_bytes (code
//	     result_too_large); a body past server.max_body_bytes (too_large)
//	503  worth retrying unchanged (code unavailable), with Retry-After
//	504  past query.timeout (code timeout)
//
// The request's context is the query's: a client that goes away cancels
// it. The rows are written as they are iterated and flushed every
// queryFlushRows, but the engine still holds the whole result in memory
// before the first is written; the status and headers are sent only once
// it has, so every error above is a proper answer.

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/resultfmt"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/metrics"
	"github.com/meterstore/meterstore/store"
)

// queryPath is the route of a query.
const queryPath = "/v1/query"

// queryFlushRows is how many rows a query's answer writes between flushes.
const queryFlushRows = 1000

// The media types a query answers in, and Arrow's, which it does not yet.
const (
	mediaCSV    = "text/csv"
	mediaNDJSON = "application/x-ndjson"
	mediaArrow  = "application/vnd.apache.arrow.stream"
)

// statusClientClosed is the status logged and counted for a query whose
// client went away before the answer (nginx's 499); no one receives it.
const statusClientClosed = 499

// routeQuery registers the query route.
func (h *handler) routeQuery() {
	h.mux.Handle("POST "+queryPath, h.guard([]string{config.ScopeQuery}, h.query))
}

// queryRequest is the body of a query.
type queryRequest struct {
	Table string `json:"table"`
	SQL   string `json:"sql"`
}

func (h *handler) query(w http.ResponseWriter, r *http.Request) {
	req, err := decodeQuery(r.Body)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, "too_large",
				fmt.Sprintf("the body is larger than server.max_body_bytes, %d bytes", tooLarge.Limit))
			return
		}
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	tok, _ := r.Context().Value(tokenKey{}).(config.Token)
	if len(tok.Tables) > 0 && !slices.Contains(tok.Tables, req.Table) {
		h.refuse(w, r, http.StatusForbidden, metrics.ReasonForbidden, tok.Name,
			fmt.Sprintf("token %q may not touch table %q", tok.Name, req.Table))
		return
	}
	if _, err := h.s.Declaration(req.Table); errors.Is(err, store.ErrNoTable) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no such table: %q", req.Table))
		return
	} else if err != nil {
		h.internal(w, r, err)
		return
	}
	media, err := negotiate(r.Header.Values("Accept"))
	if err != nil {
		writeError(w, http.StatusNotAcceptable, "not_acceptable", err.Error())
		return
	}

	start := time.Now()
	res, err := h.s.Query(r.Context(), req.Table, req.SQL)
	attrs := []slog.Attr{slog.String("token", tok.Name), slog.String("table", req.Table), slog.Duration("took", time.Since(start))}
	if err != nil {
		status, code, msg := queryFailure(err)
		if r.Context().Err() != nil {
			status, code, msg = statusClientClosed, "canceled", "the request was canceled"
		}
		h.log.LogAttrs(r.Context(), slog.LevelInfo, "query", append(attrs, slog.Int("status", status), slog.Any("err", err))...)
		switch status {
		case http.StatusInternalServerError:
			h.internal(w, r, err)
			return
		case http.StatusServiceUnavailable:
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
		}
		writeError(w, status, code, msg)
		return
	}
	h.log.LogAttrs(r.Context(), slog.LevelInfo, "query", append(attrs, slog.Int("rows", len(res.Rows)))...)

	hdr := w.Header()
	wm := ""
	if res.HasWatermark {
		wm = res.Watermark.UTC().Format(time.RFC3339Nano)
	}
	hdr.Set("X-MeterStore-Watermark", wm)
	hdr.Set("X-MeterStore-Tiers", strings.Join(res.Tiers, ","))
	hdr.Set("Cache-Control", "no-store")
	if media == mediaCSV {
		hdr.Set("Content-Type", "text/csv; charset=utf-8; header=present")
	} else {
		hdr.Set("Content-Type", mediaNDJSON)
	}
	w.WriteHeader(http.StatusOK)
	if err := writeRows(w, media, res); err != nil {
		h.log.LogAttrs(r.Context(), slog.LevelWarn, "query answer cut short", slog.String("token", tok.Name),
			slog.String("table", req.Table), slog.Any("err", err))
		var re renderError
		if errors.As(err, &re) {
			// The status is sent and the connection is sound: cut the
			// answer short, so that the client does not take it for the
			// whole result.
			panic(http.ErrAbortHandler)
		}
	}
}

// renderError is a value writeRows could not render; any other error of
// it is the connection's.
type renderError struct{ err error }

func (e renderError) Error() string { return e.err.Error() }
func (e renderError) Unwrap() error { return e.err }

// decodeQuery reads the body of a query: one JSON object naming the table
// and the statement, and nothing after it.
func decodeQuery(body io.Reader) (queryRequest, error) {
	var req queryRequest
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return req, err
		}
		return req, fmt.Errorf(`the body is not a JSON object {"table": "...", "sql": "..."}: %v`, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return req, errors.New("the body holds more than one JSON object")
	}
	switch {
	case req.Table == "":
		return req, errors.New(`the body names no "table"`)
	case strings.TrimSpace(req.SQL) == "":
		return req, errors.New(`the body holds no "sql"`)
	}
	return req, nil
}

// negotiate returns the media type to answer a request whose Accept
// headers are accept: the first, in the order of their q values, of the
// media ranges it answers in; no Accept at all means JSON lines.
func negotiate(accept []string) (string, error) {
	type mediaRange struct {
		typ string
		q   float64
	}
	var ranges []mediaRange
	for _, h := range accept {
		for _, part := range strings.Split(h, ",") {
			if strings.TrimSpace(part) == "" {
				continue
			}
			typ, params, err := mime.ParseMediaType(part)
			if err != nil {
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if q, err = strconv.ParseFloat(s, 64); err != nil {
					continue
				}
			}
			ranges = append(ranges, mediaRange{typ, q})
		}
	}
	if len(ranges) == 0 {
		return mediaNDJSON, nil
	}
	sort.SliceStable(ranges, func(i, j int) bool { return ranges[i].q > ranges[j].q })
	arrow := false
	for _, mr := range ranges {
		if mr.q <= 0 {
			continue
		}
		switch mr.typ {
		case mediaCSV, "text/*":
			return mediaCSV, nil
		case mediaNDJSON, "application/jsonl", "application/*", "*/*":
			return mediaNDJSON, nil
		case mediaArrow:
			arrow = true
		}
	}
	if arrow {
		return "", errors.New("Arrow streams (" + mediaArrow + ") come with the streaming query engine; " +
			"for now ask for " + mediaNDJSON + " or " + mediaCSV)
	}
	return "", fmt.Errorf("Accept %q: a query answers in %s or %s", strings.Join(accept, ", "), mediaNDJSON, mediaCSV)
}

// queryFailure classifies the error of a query: its status, code and
// message. A 500's message is logged, not answered.
func queryFailure(err error) (int, string, string) {
	switch {
	case errors.Is(err, store.ErrNotReadOnly):
		return http.StatusBadRequest, "not_read_only", err.Error()
	case errors.Is(err, store.ErrTooManyRows), errors.Is(err, store.ErrResultTooLarge):
		return http.StatusRequestEntityTooLarge, "result_too_large", err.Error()
	case errors.Is(err, store.ErrQueryTimeout):
		return http.StatusGatewayTimeout, "timeout", err.Error()
	case errors.Is(err, store.ErrNoTable):
		return http.StatusNotFound, "not_found", err.Error()
	case store.IsRetryable(err):
		return http.StatusServiceUnavailable, "unavailable", err.Error()
	}
	return http.StatusInternalServerError, "internal", "internal error"
}

// writeRows writes the rows of res to w in media, flushing every
// queryFlushRows rows; the CSV has a header row, the column names as the
// query gave them.
func writeRows(w http.ResponseWriter, media string, res *store.Result) error {
	rc := http.NewResponseController(w)
	flush := func() error {
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		return nil
	}
	if media == mediaCSV {
		cw := csv.NewWriter(w)
		if err := cw.Write(res.Columns); err != nil {
			return err
		}
		for i, row := range res.Rows {
			if err := cw.Write(resultfmt.Cells(row, res.Types)); err != nil {
				return err
			}
			if (i+1)%queryFlushRows == 0 {
				if cw.Flush(); cw.Error() != nil {
					return cw.Error()
				}
				if err := flush(); err != nil {
					return err
				}
			}
		}
		cw.Flush()
		return cw.Error()
	}
	j := resultfmt.NewJSONLines(res.Columns, res.Types)
	var b bytes.Buffer
	for i, row := range res.Rows {
		line, err := j.Line(row)
		if err != nil {
			return renderError{err}
		}
		b.Write(line)
		if (i+1)%queryFlushRows == 0 {
			if _, err := w.Write(b.Bytes()); err != nil {
				return err
			}
			b.Reset()
			if err := flush(); err != nil {
				return err
			}
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
