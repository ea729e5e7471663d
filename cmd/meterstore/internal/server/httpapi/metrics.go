package httpapi

// This file is the server's own telemetry: GET /metrics, which needs scope
// admin and serves the Prometheus text exposition of Options.Metrics, and
// the middleware that counts every request and its duration by route,
// method and status (meterstore.http.requests and
// meterstore.http.request.duration); and NewTelemetry, the same two
// endpoints alone, for a process that serves no API.
//
// The library records through the OpenTelemetry API only; the Prometheus
// exporter lives here, in the server, which is the one program that
// chooses where measurements go.

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/metrics"
)

// metricsPath is the path of the exposition.
const metricsPath = "/metrics"

// Prometheus returns a MeterProvider whose reader is the OpenTelemetry
// Prometheus exporter on a registry of its own (with the Go runtime's and
// the process's collectors), and the Exposition that serves that registry
// in the Prometheus exposition format, for Options.Metrics. Give the
// provider to the store (store.WithMeters) and to New (Options.Meters),
// and shut it down when the server has stopped.
func Prometheus() (*sdkmetric.MeterProvider, *Exposition, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, nil, err
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, nil, err
	}
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	return mp, &Exposition{g: reg}, nil
}

// NewTelemetry returns the endpoints of a process that serves its
// telemetry and no API, such as meterstore maintain --metrics-listen:
// GET /healthz without a token, and GET /metrics (o.Metrics) for a token
// with scope admin, guarded, refused, logged and counted as New does
// them. Of o it uses Tokens, Meters, Metrics and Logger.
func NewTelemetry(o Options) (http.Handler, error) {
	m, err := metrics.New(o.Meters)
	if err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &handler{o: o, log: log, metrics: m, mux: newRouteMux()}
	h.mux.HandleFunc("GET /healthz", h.healthz)
	h.handleMetrics()
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || r.URL.Path == metricsPath {
			w.Header().Set("Allow", "GET")
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", fmt.Sprintf("%s takes GET, not %s", r.URL.Path, r.Method))
			return
		}
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.URL.Path+"; this process serves /healthz and /metrics")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.serveCounted(w, r, h.mux) }), nil
}

// handleMetrics routes GET /metrics, for tokens with scope admin; a token
// limited to tables sees the series of those tables alone (exposition.go).
func (h *handler) handleMetrics() {
	h.mux.Handle("GET "+metricsPath, h.guard([]string{config.ScopeAdmin}, func(w http.ResponseWriter, r *http.Request) {
		if h.o.Metrics == nil {
			writeError(w, http.StatusNotFound, "not_found", "this server exports no metrics")
			return
		}
		tok, _ := r.Context().Value(tokenKey{}).(config.Token)
		h.o.Metrics.For(tok).ServeHTTP(w, r)
	}))
}

// serveCounted serves r with next and records the request: the route
// pattern that took it without its method ("/v1/status"; the catch-all
// of unknown paths counts as unmatched), its method and the status
// answered.
func (h *handler) serveCounted(w http.ResponseWriter, r *http.Request, next http.Handler) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	next.ServeHTTP(sw, r)
	// The mux sets the pattern on the request it was given.
	route := r.Pattern
	if _, path, ok := strings.Cut(route, " "); ok {
		route = path
	}
	if route == "/" {
		route = ""
	}
	status := sw.status
	if status == 0 {
		status = http.StatusOK
	}
	h.metrics.HTTPRequest(r.Context(), route, r.Method, status, time.Since(start))
}

// statusWriter remembers the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets a handler stream through the wrapper.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
