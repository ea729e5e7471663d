package httpapi

// GET /v1/tables/{table}/series/{malo_id}/{obis_code}: the resolved
// readings of one series over a range, read by the store's typed path
// (PostgreSQL's index and the Parquet page index, no SQL engine), as
// readings has them.
//
//	query  from, to: RFC 3339, both required, to after from, at most
//	       maxSeriesRange apart; quality (repeated, at most
//	       maxSeriesQualities): keep readings of these MSCONS codes;
//	       <identity column>=value: the series of that value; mode:
//	       auto, historical or operational, as POST /v1/query's. Any
//	       other parameter is refused.
//	Accept as POST /v1/query: CSV, JSON lines or an Arrow IPC stream,
//	       the columns of readings, by from, then identity values
//
//	200  the readings, with X-MeterStore-Watermark, X-MeterStore-Tiers,
//	     X-MeterStore-Tables and X-MeterStore-Mode as POST /v1/query
//	     sends them
//	400  a malformed or unknown parameter, a range unbounded, reversed
//	     or too long, an input past its bound (bad_request)
//	403  the token lacks scope query or may not touch the table
//	     (forbidden: decided from the token and the table's name before
//	     anything is read)
//	404  no such table
//	406  an Accept this route cannot answer (not_acceptable)
//	422  a market location whose check digit fails, an OBIS code or
//	     quality code that is none (invalid_input)
//	500, 503, 504 as POST /v1/query
//
// The readings of one series over at most maxSeriesRange are held in
// memory before the status is sent, so that every error is a proper
// answer: a year of quarter hours of one series is some 35,000.

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/resultfmt"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

// seriesPath is the route of a typed series read.
const seriesPath = "/v1/tables/{table}/series/{malo_id}/{obis_code}"

// The bounds of a typed series read's inputs.
const (
	// maxSeriesRange bounds to minus from: a year and a day, so that the
	// readings held stay a few MB whatever the table.
	maxSeriesRange = 367 * 24 * time.Hour
	// maxSeriesQuery bounds the query string, in bytes.
	maxSeriesQuery = 4096
	// maxSeriesQualities bounds the quality parameters: there are seven
	// codes.
	maxSeriesQualities = 8
	// maxSeriesValue bounds an identity value, in bytes, as the hot tier
	// bounds a text column.
	maxSeriesValue = 1024
	// maxOBISLen bounds the OBIS code of the path, in bytes.
	maxOBISLen = 64
)

// The size of a typed series answer, about and from above, in any media:
// a CSV row of a table without columns of its own is some 170 bytes.
const (
	seriesHeadBytes = 4 << 10
	seriesRowBytes  = 256
)

// seriesReader is what the typed route asks of the front door beyond
// Store: a *store.Store has it.
type seriesReader interface {
	SeriesRead(ctx context.Context, name string, q store.SeriesQuery) (*store.SeriesResult, error)
}

// routeSeries registers the typed series route.
func (h *handler) routeSeries() {
	h.mux.Handle("GET "+seriesPath, h.guard([]string{config.ScopeQuery}, h.series))
}

func (h *handler) series(w http.ResponseWriter, r *http.Request) {
	tok, _ := r.Context().Value(tokenKey{}).(config.Token)
	name := r.PathValue("table")
	// Authorise before reading, by the token and the table's name alone.
	decl, ok := h.touch(w, r, tok, name)
	if !ok {
		return
	}
	sr, ok := h.s.(seriesReader)
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "typed series reads are not served here")
		return
	}
	q, status, err := parseSeries(r, decl)
	if err != nil {
		code := "bad_request"
		if status == http.StatusUnprocessableEntity {
			code = "invalid_input"
		}
		writeError(w, status, code, err.Error())
		return
	}
	media, err := negotiate(r.Header.Values("Accept"))
	if err != nil {
		writeError(w, http.StatusNotAcceptable, "not_acceptable", err.Error())
		return
	}
	start := time.Now()
	attrs := []slog.Attr{slog.String("token", tok.Name), slog.String("table", name)}
	res, err := sr.SeriesRead(r.Context(), name, q)
	var out answer
	if err == nil {
		held := h.holdAnswer(w, seriesHeadBytes+len(res.Readings)*seriesRowBytes)
		defer h.releaseHeld(held)
		out = h.beginAnswer(w, media, name, seriesHeader(decl, res), held)
		// One row's buffer serves every row: the answers copy what they
		// keep of a row before the next.
		var row []any
		for i := range res.Readings {
			row = seriesRow(row, decl, &res.Readings[i])
			if err = out.row(row); err != nil {
				break
			}
		}
		if err == nil {
			err = out.end()
		}
	}
	attrs = append(attrs, slog.Duration("took", time.Since(start)))
	if err == nil {
		h.log.LogAttrs(r.Context(), slog.LevelInfo, "series", append(attrs, slog.Int("rows", len(res.Readings)))...)
		return
	}
	h.readFailed(w, r, "series", tok, out, err, attrs)
}

// parseSeries returns the typed read r asks for of table decl, or the
// status (400 or 422) and why it cannot.
func parseSeries(r *http.Request, decl store.Table) (store.SeriesQuery, int, error) {
	bad := func(format string, args ...any) (store.SeriesQuery, int, error) {
		return store.SeriesQuery{}, http.StatusBadRequest, fmt.Errorf(format, args...)
	}
	invalid := func(field string, err error) (store.SeriesQuery, int, error) {
		return store.SeriesQuery{}, http.StatusUnprocessableEntity, fmt.Errorf("%s: %w", field, err)
	}
	if n := len(r.URL.RawQuery); n > maxSeriesQuery {
		return bad("the query string has %d bytes, at most %d are read", n, maxSeriesQuery)
	}
	maloText, obisText := r.PathValue("malo_id"), r.PathValue("obis_code")
	malo, err := metering.ParseMaLo(maloText)
	if err != nil {
		return invalid("malo_id", err)
	}
	if len(obisText) > maxOBISLen {
		return bad("obis_code has %d bytes, at most %d", len(obisText), maxOBISLen)
	}
	obis, err := metering.ParseOBIS(obisText)
	if err != nil {
		return invalid("obis_code", err)
	}
	vals := r.URL.Query()
	q := store.SeriesQuery{MaLo: malo.String(), OBIS: obis.String()}
	once := func(key string) (string, bool, error) {
		v, ok := vals[key]
		if !ok {
			return "", false, nil
		}
		if len(v) != 1 {
			return "", false, fmt.Errorf("%s is given %d times", key, len(v))
		}
		return v[0], true, nil
	}
	instant := func(key string) (time.Time, error) {
		v, ok, err := once(key)
		switch {
		case err != nil:
			return time.Time{}, err
		case !ok:
			return time.Time{}, fmt.Errorf("%s is required (RFC 3339)", key)
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s: want RFC 3339, such as 2026-03-02T00:00:00Z", key)
		}
		return t.UTC(), nil
	}
	if q.From, err = instant("from"); err != nil {
		return bad("%v", err)
	}
	if q.To, err = instant("to"); err != nil {
		return bad("%v", err)
	}
	if !q.From.Before(q.To) || q.To.Sub(q.From) > maxSeriesRange {
		return bad("want from before to, at most %d days apart", int(maxSeriesRange/(24*time.Hour)))
	}
	if m, ok, err := once("mode"); err != nil {
		return bad("%v", err)
	} else if ok {
		if q.Read.Mode, err = store.ParseReadMode(m); err != nil {
			return bad("mode: want auto, historical or operational")
		}
	}
	if qs := vals["quality"]; len(qs) > maxSeriesQualities {
		return bad("quality is given %d times, at most %d", len(qs), maxSeriesQualities)
	} else {
		for _, s := range qs {
			ql, err := metering.ParseQuality(s)
			if err != nil {
				return invalid("quality", err)
			}
			q.Qualities = append(q.Qualities, ql)
		}
	}
	for key, v := range vals {
		switch key {
		case "from", "to", "mode", "quality":
			continue
		}
		if !slices.ContainsFunc(decl.Identity(), func(c series.Column) bool { return c.Name == key }) {
			return bad("unknown parameter %q: want from, to, quality, mode or an identity column of %s", key, decl.Name)
		}
		if len(v) != 1 {
			return bad("%s is given %d times", key, len(v))
		}
		if len(v[0]) > maxSeriesValue {
			return bad("%s has %d bytes, at most %d", key, len(v[0]), maxSeriesValue)
		}
		if q.Identity == nil {
			q.Identity = map[string]string{}
		}
		q.Identity[key] = v[0]
	}
	return q, 0, nil
}

// seriesHeader returns the header of res, read from table decl: the
// columns of readings, typed as a query of them is.
func seriesHeader(decl store.Table, res *store.SeriesResult) *store.ResultHeader {
	const ts = "TIMESTAMP WITH TIME ZONE"
	interval := decl.TimeModel == series.Interval
	cols := []string{"malo_id", "melo_id", "obis_code", "sparte", "from"}
	types := []string{"VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", ts}
	if interval {
		cols, types = append(cols, "to"), append(types, ts)
	}
	cols, types = append(cols, "value", "unit", "quality"), append(types, "DECIMAL(18,6)", "VARCHAR", "VARCHAR")
	if interval {
		cols, types = append(cols, "resolution"), append(types, "VARCHAR")
	}
	cols = append(cols, "version", "version_scope", "recorded_at", "balancing_day", "subject_id")
	types = append(types, "DECIMAL(20,0)", "VARCHAR", ts, "DATE", "VARCHAR")
	for _, c := range decl.Columns {
		cols = append(cols, c.Name)
		if c.Type == series.BigInt {
			types = append(types, "BIGINT")
		} else {
			types = append(types, "VARCHAR")
		}
	}
	tr := res.Read
	return &store.ResultHeader{Columns: cols, Types: types, Watermark: tr.Watermark, HasWatermark: tr.HasWatermark, Tiers: tr.Tiers,
		Snapshot: tr.Snapshot, AsOf: tr.AsOf, SnapshotAt: tr.SnapshotAt, Ceiling: tr.Ceiling, Range: tr.Range, Mode: tr.Mode,
		Tables: []store.TableRead{tr}}
}

// seriesRow returns the row of rd, read from table decl, in seriesHeader's
// columns, in the place of prev, the row before (nil for the first).
// Decimals are resultfmt.Fixed, which render as duckdb.Decimal does
// without a math/big value each; a value equal to the one before in its
// column keeps that one's interface value, as a series' rows repeat most
// of theirs and each new one costs an allocation.
func seriesRow(prev []any, decl store.Table, rd *series.Reading) []any {
	row := prev[:0]
	put := func(v any) { row = append(row, v) }
	text := func(s string) {
		if s == "" {
			put(nil)
			return
		}
		put(same(prev, len(row), s))
	}
	instant := func(t time.Time) { put(same(prev, len(row), t)) }
	fixed := func(f resultfmt.Fixed) { put(same(prev, len(row), f)) }
	interval := decl.TimeModel == series.Interval
	text(rd.MaLo)
	text(rd.MeLo)
	text(rd.OBIS)
	text(rd.Commodity.String())
	instant(rd.From)
	if interval {
		instant(rd.To)
	}
	fixed(resultfmt.FixedInt(int64(rd.Value), 6))
	text(rd.Unit.String())
	text(rd.Quality.String())
	if interval {
		text(rd.Resolution.String())
	}
	fixed(resultfmt.Fixed{Abs: rd.Version})
	text(rd.VersionScope)
	instant(rd.RecordedAt)
	instant(time.Date(rd.BalancingDay.Year, rd.BalancingDay.Month, rd.BalancingDay.Day, 0, 0, 0, 0, time.UTC))
	text(rd.Subject)
	for _, c := range decl.Columns {
		v, ok := rd.Extra[c.Name]
		switch {
		case !ok:
			put(nil)
		case c.Type == series.BigInt:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				put(nil)
				continue
			}
			put(same(prev, len(row), n))
		default:
			put(same(prev, len(row), v))
		}
	}
	return row
}

// same returns v as an interface value: prev[i] where that holds v, so
// that no allocation boxes it again, else a new one.
func same[T comparable](prev []any, i int, v T) any {
	if i < len(prev) {
		if old, ok := prev[i].(T); ok && old == v {
			return prev[i]
		}
	}
	return v
}
