package httpapi

// POST /v1/query: one read-only SQL statement over a table's readings in
// both tiers, as meterstore query runs it, its rows rendered as that
// command renders them (internal/resultfmt), streamed.
//
//	body   {"sql": "...", "table": "...", "params": [...]}: every
//	       declared table is a schema of the statement (power.readings,
//	       gas.completeness); "table", optional, is the default of an
//	       unqualified readings, readings_versions or completeness;
//	       "params", optional, binds the statement's placeholders: an
//	       array $1, $2 or ?, an object $name, never made SQL text;
//	       "mode", optional: auto (both tiers), historical (the cold
//	       tier alone, no PostgreSQL), operational (the hot tier alone,
//	       no Iceberg)
//	Accept text/csv: a header row, then the rows;
//	       application/x-ndjson (also application/jsonl, */*, or no
//	       Accept): one JSON object per row, a repeated column name
//	       suffixed _2, _3, ...;
//	       application/vnd.apache.arrow.stream: an Arrow IPC stream,
//	       typed as arrowrows says
//
//	200  the rows, with X-MeterStore-Watermark (RFC 3339, empty when the
//	     query read no archived watermark) and X-MeterStore-Tiers (the
//	     tiers read, comma-separated), both of the request's table or,
//	     without one, of the one table the statement read, and
//	     X-MeterStore-Tables: a JSON array of every table the statement
//	     read (it may name others as <table>.readings), the request's
//	     first, as {"table", "watermark", "tiers", "snapshot"}
//	400  a malformed body (code bad_request), not a single SELECT
//	     (not_read_only), SQL DuckDB cannot parse, bind or evaluate
//	     (invalid_query: a syntax error, an unknown name, a failed cast
//	     or error() call, a statement past store.MaxStatementBytes, a
//	     value of "params" no placeholder takes)
//	403  the token lacks scope query, or lists tables without this one
//	     or without another the statement reads (forbidden: decided from
//	     the statement's text before anything is read, so the same
//	     whatever the tables hold), or the statement reaches past the
//	     tables: a file, the network, an extension, a secret, a setting
//	     (not_permitted)
//	404  no such table
//	406  an Accept this route cannot answer (code not_acceptable)
//	413  a body past server.max_body_bytes (too_large)
//	422  the statement needs more than query.memory_limit (memory_limit),
//	     or a value of its result is larger than a query hands over
//	     (too_large)
//	500  an internal failure (internal), or a cold file that is not the
//	     one its commit recorded (altered_file, naming it)
//	503  worth retrying unchanged (code unavailable), with Retry-After
//	504  past query.timeout (code timeout)
//
// Every 4xx is logged at INFO with its code alone, never the statement or
// the error's text, which may quote its values; a 500 at ERROR.
//
// The rows are written as the engine hands them over, never held:
// query.max_rows and query.max_result_bytes, which bound a result held in
// memory, do not apply. The status and headers go out before the first
// row, once DuckDB has computed the result, so that every error above is a
// proper answer; an error after that can only cut the answer short, and
// says so: CSV and JSON lines end with the trailer X-MeterStore-Error (a
// JSON error object), JSON lines with a last line {"error": ..., "code":
// ...} too; an Arrow stream is cut off without its end-of-stream marker
// (the connection is dropped), so that a reader fails. The request's
// context is the query's: a client that goes away cancels it.

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/apierror"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/auth"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/arrowrows"
	"github.com/meterstore/meterstore/internal/metrics"
	"github.com/meterstore/meterstore/internal/resultfmt"
	"github.com/meterstore/meterstore/store"
)

// queryPath is the route of a query.
const queryPath = "/v1/query"

// queryFlushRows is how many rows a CSV or JSON-lines answer writes between
// flushes; an Arrow answer flushes each record batch.
const queryFlushRows = 1000

// queryFlushBytes is how many bytes of JSON lines an answer holds before it
// sends them, however few rows they are: a line of that size or more is
// sent alone, unheld. A thousand rows of 60 MB values were held whole.
const queryFlushBytes = 64 << 10

// The media types a query answers in.
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

// tableRead is one element of X-MeterStore-Tables.
type tableRead struct {
	Table     string   `json:"table"`
	Watermark string   `json:"watermark"` // RFC 3339, empty without one
	Tiers     []string `json:"tiers"`
	Snapshot  int64    `json:"snapshot,omitempty"`
	// Unseen is the range of "from" a historical or operational read
	// could not see, its bounds RFC 3339, empty where open.
	Unseen *unseenRange `json:"unseen,omitempty"`
}

// unseenRange is the range of "from" a read could not see.
type unseenRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// tablesHeader returns X-MeterStore-Tables: a JSON array of the tables
// the query read, the request's default table first, each with its own watermark,
// tiers and cold snapshot.
func tablesHeader(hd *store.ResultHeader) string {
	out := make([]tableRead, len(hd.Tables))
	for i, t := range hd.Tables {
		out[i] = tableRead{Table: t.Name, Tiers: t.Tiers, Snapshot: t.Snapshot}
		if out[i].Tiers == nil {
			out[i].Tiers = []string{}
		}
		if t.HasWatermark {
			out[i].Watermark = t.Watermark.UTC().Format(time.RFC3339Nano)
		}
		if t.HasUnseen {
			out[i].Unseen = &unseenRange{From: stampOrEmpty(t.Unseen.From), To: stampOrEmpty(t.Unseen.To)}
		}
	}
	js, err := json.Marshal(out)
	if err != nil {
		return "[]" // cannot happen: strings and numbers only
	}
	return string(js)
}

// stampOrEmpty returns t in RFC 3339, or "" for the zero time.
func stampOrEmpty(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// queryRequest is the body of a query.
type queryRequest struct {
	Table string `json:"table"`
	SQL   string `json:"sql"`
	// Params are the values of the statement's placeholders: an array
	// for $1, $2 or ?, an object for $name.
	Params json.RawMessage `json:"params"`
	params []any
	// Mode is the tiers read: auto (the default, both), historical (the
	// cold tier alone, no PostgreSQL) or operational (the hot tier
	// alone, no Iceberg).
	Mode string `json:"mode"`
	mode store.ReadMode
}

// queryParams returns the values of raw, the body's "params": a JSON
// array binds $1, $2 (and ?) in order, an object binds $name by name.
// Numbers stay exact (an integer is an int64, another number a float64),
// strings are strings, which DuckDB casts where the statement compares
// them with a typed column, as a timestamp.
func queryParams(raw json.RawMessage) ([]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf(`"params": %v`, err)
	}
	value := func(x any) (any, error) {
		switch x := x.(type) {
		case json.Number:
			if i, err := x.Int64(); err == nil {
				return i, nil
			}
			return x.Float64()
		case string, bool, nil:
			return x, nil
		}
		return nil, fmt.Errorf(`"params": a value is a string, a number, true, false or null, not %T`, x)
	}
	var out []any
	switch v := v.(type) {
	case []any:
		for _, x := range v {
			p, err := value(x)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
	case map[string]any:
		names := make([]string, 0, len(v))
		for n := range v {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			p, err := value(v[n])
			if err != nil {
				return nil, err
			}
			out = append(out, sql.Named(n, p))
		}
	default:
		return nil, errors.New(`"params" is an array (for $1, $2 or ?) or an object (for $name)`)
	}
	return out, nil
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
	if req.Table != "" {
		if _, ok := h.touch(w, r, tok, req.Table); !ok {
			return
		}
	}
	media, err := negotiate(r.Header.Values("Accept"))
	if err != nil {
		writeError(w, http.StatusNotAcceptable, "not_acceptable", err.Error())
		return
	}

	start := time.Now()
	attrs := []slog.Attr{slog.String("token", tok.Name), slog.String("table", req.Table)}
	var (
		out  answer
		rows int64
	)
	// Authorise before reading: the statement is analysed into the tables
	// it reads and refused, reading nothing, if the token may not read one
	// of them, so that the refusal is the same whatever their rows hold.
	st, err := h.s.Prepare(r.Context(), req.SQL, store.StatementOptions{Table: req.Table, Params: req.params, Read: store.ReadOptions{Mode: req.mode},
		May: func(t string) bool { return auth.MayTouch(tok, t) }})
	if err == nil {
		begin := func(hd *store.ResultHeader) error {
			out = h.beginAnswer(w, media, req.Table, hd, nil)
			return nil
		}
		row := func(vals []any) error {
			rows++
			return out.row(vals)
		}
		// Analysed and authorised, a large statement waits for its turn
		// to run: the large queries running at once are bounded apart
		// from the ingests, so that they cannot take every core from
		// them. A small one, a few series' rows, runs at once: it costs
		// little, and a portal's many must not queue behind a scan.
		g := h.running
		if st.Small() {
			g = nil
		}
		if err = g.enter(r.Context()); err == nil {
			err = st.Stream(r.Context(), begin, row)
			g.leave()
		}
		if err == nil {
			err = out.end()
		}
	}
	attrs = append(attrs, slog.Duration("took", time.Since(start)))
	if err == nil {
		h.log.LogAttrs(r.Context(), slog.LevelInfo, "query", append(attrs, slog.Int64("rows", rows))...)
		return
	}
	h.readFailed(w, r, "query", tok, out, err, append(attrs, slog.Int64("rows", rows)))
}

// readFailed answers err, the failure of a read that what names in the
// log. Before the answer began (out is nil) it is an error document, with
// Retry-After where a retry may succeed; after, the answer is cut short,
// visibly, unless the client went away.
func (h *handler) readFailed(w http.ResponseWriter, r *http.Request, what string, tok config.Token, out answer, err error, attrs []slog.Attr) {
	f := apierror.Query(r.Context(), err)
	var se sendError
	if errors.As(err, &se) {
		f = apierror.Failure{Kind: apierror.Canceled, Code: "canceled", Message: "the request was canceled"}
	}
	if f.Kind == apierror.Forbidden {
		h.refuse(w, r, http.StatusForbidden, metrics.ReasonForbidden, tok.Name, f.Message)
		return
	}
	status := queryStatus[f.Kind]
	attrs = append(attrs, slog.Int("status", status))
	if out == nil {
		h.logFailure(r, what, f, err, attrs)
		if status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
		}
		writeError(w, status, f.Code, f.Message)
		return
	}
	h.logFailure(r, what+" answer cut short", f, err, attrs)
	if f.Kind != apierror.Canceled && out.cut(f.Code, f.Message) {
		panic(http.ErrAbortHandler)
	}
}

// queryStatus is the HTTP status of each kind of failed query.
var queryStatus = map[apierror.Kind]int{
	apierror.Internal:     http.StatusInternalServerError,
	apierror.NotReadOnly:  http.StatusBadRequest,
	apierror.InvalidQuery: http.StatusBadRequest,
	apierror.Forbidden:    http.StatusForbidden,
	apierror.NotPermitted: http.StatusForbidden,
	apierror.NotFound:     http.StatusNotFound,
	apierror.Timeout:      http.StatusGatewayTimeout,
	apierror.MemoryLimit:  http.StatusUnprocessableEntity,
	apierror.TooLarge:     http.StatusUnprocessableEntity,
	apierror.Altered:      http.StatusInternalServerError,
	apierror.Unavailable:  http.StatusServiceUnavailable,
	apierror.Canceled:     statusClientClosed,
}

// logFailure logs a failed request: the client's failures at INFO with
// their code alone, since the error's text may quote the statement and
// its values; the server's at ERROR, with the error.
func (h *handler) logFailure(r *http.Request, msg string, f apierror.Failure, err error, attrs []slog.Attr) {
	if f.Client() {
		h.log.LogAttrs(r.Context(), slog.LevelInfo, msg, append(attrs, slog.String("code", f.Code))...)
		return
	}
	h.log.LogAttrs(r.Context(), slog.LevelError, msg, append(attrs, slog.Any("err", err))...)
}

// beginAnswer sends the status and headers of a query's answer in media,
// the header hd of a statement with default table (none if empty) known,
// and returns the writer of its rows. With held nil the headers go at
// once and the rows as they come, for a client waiting on a statement;
// an answer whose rows are all in hand is written through held (see
// holdAnswer), the headers with its first bytes, in as few writes to the
// client as may be.
func (h *handler) beginAnswer(w http.ResponseWriter, media, table string, hd *store.ResultHeader, held *bufio.Writer) answer {
	wm, tiers := readOf(table, hd)
	hdr := w.Header()
	hdr.Set("X-MeterStore-Watermark", wm)
	hdr.Set("X-MeterStore-Tiers", tiers)
	hdr.Set("X-MeterStore-Tables", tablesHeader(hd))
	hdr.Set("X-MeterStore-Mode", hd.Mode.String())
	hdr.Set("Cache-Control", "no-store")
	rc := http.NewResponseController(w)
	flush := func() error {
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return sendError{err}
		}
		return nil
	}
	var cw io.Writer = &clientWriter{w: w}
	if held != nil {
		// Flushing the buffer is enough: the server sends the rest, and
		// ends the body, as the handler returns.
		cw, flush = held, held.Flush
	}
	var out answer
	switch media {
	case mediaCSV:
		hdr.Set("Content-Type", "text/csv; charset=utf-8; header=present")
		hdr.Set("Trailer", trailerError)
		a := &csvAnswer{w: w, cw: cw, types: hd.Types, flush: flush, buf: make([]byte, 0, 2*csvChunk)}
		for i, c := range hd.Columns {
			if i > 0 {
				a.buf = append(a.buf, ',')
			}
			a.buf = resultfmt.AppendCSVField(a.buf, c)
		}
		a.buf = append(a.buf, '\n') // held; an error shows in the first write
		out = a
	case mediaArrow:
		hdr.Set("Content-Type", mediaArrow)
		out = newArrowAnswer(cw, hd.Columns, hd.Types, arrowrows.Meta{Watermark: wm, Tiers: tiers, Mode: hd.Mode.String()}, flush)
	default:
		hdr.Set("Content-Type", mediaNDJSON)
		hdr.Set("Trailer", trailerError)
		out = &jsonAnswer{w: w, cw: cw, j: resultfmt.NewJSONLines(hd.Columns, hd.Types), flush: flush}
	}
	w.WriteHeader(http.StatusOK)
	if held == nil {
		flush() // the headers at once; a failed flush shows in the first write
	}
	return out
}

// maxHold bounds the buffer of an answer held whole (holdAnswer): past
// it, the answer goes in writes of this size.
const maxHold = 256 << 10

// pooledHold is the size of the buffers of held answers the handler keeps
// for the next (handler.held): a day of quarter hours of one series fits.
const pooledHold = 32 << 10

// holdAnswer returns the buffer an answer of about size bytes, all in
// hand, is written to w through: at most maxHold bytes, one kept from an
// earlier answer where pooledHold are enough. releaseHeld gives it back
// once the handler has done with w.
func (h *handler) holdAnswer(w http.ResponseWriter, size int) *bufio.Writer {
	cw := &clientWriter{w: w}
	if size > pooledHold {
		return bufio.NewWriterSize(cw, min(size, maxHold))
	}
	if bw, ok := h.held.Get().(*bufio.Writer); ok {
		bw.Reset(cw)
		return bw
	}
	return bufio.NewWriterSize(cw, pooledHold)
}

// releaseHeld keeps bw, a buffer of holdAnswer's, for the next answer,
// what it still holds dropped.
func (h *handler) releaseHeld(bw *bufio.Writer) {
	if bw.Size() == pooledHold {
		bw.Reset(nil)
		h.held.Put(bw)
	}
}

// readOf returns the watermark (RFC 3339, empty without one) and the tiers
// of X-MeterStore-Watermark and X-MeterStore-Tiers: those of the default
// table, or without one of the one table the statement read, as Flight
// SQL's schema metadata has them; empty when it read none or several, each
// split at a watermark of its own.
func readOf(table string, hd *store.ResultHeader) (watermark, tiers string) {
	hasWM, wm, ts := hd.HasWatermark, hd.Watermark, hd.Tiers
	if table == "" {
		if len(hd.Tables) != 1 {
			return "", ""
		}
		hasWM, wm, ts = hd.Tables[0].HasWatermark, hd.Tables[0].Watermark, hd.Tables[0].Tiers
	}
	if hasWM {
		watermark = wm.UTC().Format(time.RFC3339Nano)
	}
	return watermark, strings.Join(ts, ",")
}

// trailerError is the trailer that says an answer was cut short, and why:
// a JSON error object.
const trailerError = "X-MeterStore-Error"

// An answer writes the rows of a query's answer in one media type.
type answer interface {
	// row writes a row, or holds it until it sends a batch.
	row(vals []any) error
	// end sends the rows held and ends the answer.
	end() error
	// cut ends an answer an error cut short, with code and msg, and
	// reports whether the connection must be dropped to say so.
	cut(code, msg string) (drop bool)
}

// sendError is an error writing to the client: it went away.
type sendError struct{ err error }

func (e sendError) Error() string { return e.err.Error() }
func (e sendError) Unwrap() error { return e.err }

// clientWriter writes to the client, marking its errors as sendErrors.
type clientWriter struct{ w io.Writer }

func (c *clientWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		err = sendError{err}
	}
	return n, err
}

// csvAnswer writes rows as CSV with a header row, the column names as the
// query gave them, as encoding/csv writes them (resultfmt.CSVRow),
// flushing every queryFlushRows rows. Lines are held in buf and written
// once csvChunk bytes are, as csv.Writer's buffer would.
type csvAnswer struct {
	w     http.ResponseWriter
	cw    io.Writer
	types []string
	text  resultfmt.CSVRow
	buf   []byte
	flush func() error
	rows  int
}

// csvChunk is what a CSV answer holds before it writes: the buffer of an
// encoding/csv Writer.
const csvChunk = 4096

func (a *csvAnswer) row(vals []any) error {
	a.buf = a.text.Append(a.buf, vals, a.types)
	if a.rows++; a.rows%queryFlushRows == 0 {
		return a.send()
	}
	if len(a.buf) >= csvChunk {
		return a.write()
	}
	return nil
}

// write writes the lines held.
func (a *csvAnswer) write() error {
	if len(a.buf) == 0 {
		return nil
	}
	_, err := a.cw.Write(a.buf)
	a.buf = a.buf[:0]
	return err
}

func (a *csvAnswer) send() error {
	if err := a.write(); err != nil {
		return err
	}
	return a.flush()
}

func (a *csvAnswer) end() error { return a.send() }

func (a *csvAnswer) cut(code, msg string) bool {
	a.write()
	a.w.Header().Set(trailerError, errorTrailer(code, msg))
	return false
}

// jsonAnswer writes rows as JSON lines, flushing every queryFlushRows
// rows or queryFlushBytes bytes.
type jsonAnswer struct {
	w     http.ResponseWriter
	cw    io.Writer
	j     *resultfmt.JSONLines
	b     bytes.Buffer
	flush func() error
	rows  int
}

func (a *jsonAnswer) row(vals []any) error {
	line, err := a.j.Line(vals)
	if err != nil {
		return renderError{err}
	}
	a.rows++
	if len(line) >= queryFlushBytes {
		// Sent as it is, after the lines held, not copied.
		if a.b.Len() > 0 {
			if err := a.send(); err != nil {
				return err
			}
		}
		if _, err := a.cw.Write(line); err != nil {
			return err
		}
		return a.flush()
	}
	a.b.Write(line)
	if a.rows%queryFlushRows == 0 || a.b.Len() >= queryFlushBytes {
		return a.send()
	}
	return nil
}

func (a *jsonAnswer) send() error {
	_, err := a.cw.Write(a.b.Bytes())
	a.b.Reset()
	if err != nil {
		return err
	}
	return a.flush()
}

func (a *jsonAnswer) end() error { return a.send() }

func (a *jsonAnswer) cut(code, msg string) bool {
	line, _ := json.Marshal(apiError{Error: msg, Code: code}) // strings always marshal
	a.b.Write(line)
	a.b.WriteByte('\n')
	a.send()
	a.w.Header().Set(trailerError, errorTrailer(code, msg))
	return false
}

// errorTrailer is the value of trailerError: the JSON error, with every
// character beyond ASCII escaped, as a header value must be.
func errorTrailer(code, msg string) string {
	b, _ := json.Marshal(apiError{Error: msg, Code: code})
	var s strings.Builder
	for _, r := range string(b) {
		switch {
		case r < 0x80:
			s.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&s, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&s, `\u%04x`, r)
		}
	}
	return s.String()
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
		return req, fmt.Errorf(`the body is not a JSON object {"sql": "...", "table": "..."}: %v`, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return req, errors.New("the body holds more than one JSON object")
	}
	if strings.TrimSpace(req.SQL) == "" {
		return req, errors.New(`the body holds no "sql"`)
	}
	var err error
	if req.mode, err = store.ParseReadMode(req.Mode); err != nil {
		return req, fmt.Errorf(`"mode" %q: auto, historical or operational`, req.Mode)
	}
	req.params, err = queryParams(req.Params)
	return req, err
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
			return mediaArrow, nil
		}
	}
	return "", fmt.Errorf("Accept %q: a query answers in %s, %s or %s", strings.Join(accept, ", "), mediaNDJSON, mediaCSV, mediaArrow)
}
