package httpapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/meterstore/meterstore/internal/ingest"
	"github.com/meterstore/meterstore/series"
)

// messageReport is what became of one message of an MSCONS interchange.
type messageReport struct {
	Number   int    `json:"number"`
	Ref      string `json:"ref"`
	Document string `json:"document,omitempty"`
	Readings int    `json:"readings"`
	Inserted int    `json:"inserted"`
	Present  int    `json:"present"`
	Late     int    `json:"late"`
	// Superseded and Shadowed count readings stored beside other
	// versions of their merge key (series.Status).
	Superseded int `json:"superseded"`
	Shadowed   int `json:"shadowed"`
	// Error, if set, refused the message: nothing of it is written.
	Error string `json:"error,omitempty"`
}

// runMSCONS writes an MSCONS interchange, each message atomically, its
// groups of messages as a stream, and answers 200 when every message is
// stored, 422 naming the refused ones.
func (h *handler) runMSCONS(ctx context.Context, token, table string, decl *series.Table, body io.Reader, write ingest.WriteFunc, stream ingest.StreamFunc) ingestAnswer {
	reps, err := ingest.RunMSCONS(ctx, body, decl, write, ingest.MSCONSOptions{Stream: stream})
	var counts ingestCounts
	refused := 0
	for _, r := range reps {
		m := messageReport{Number: r.Number, Ref: r.Ref, Document: r.Document, Readings: r.Readings,
			Inserted: r.Inserted, Present: r.Present, Late: r.Late, Superseded: r.Superseded, Shadowed: r.Shadowed}
		if r.Err != nil {
			m.Error = r.Err.Error()
			refused++
			counts.Refused += r.Readings
		} else {
			counts.Batches++
		}
		counts.Inserted += r.Inserted
		counts.Present += r.Present
		counts.Late += r.Late
		counts.Superseded += r.Superseded
		counts.Shadowed += r.Shadowed
		counts.Messages = append(counts.Messages, m)
	}
	attrs := []slog.Attr{slog.String("token", token), slog.String("table", table), slog.String("format", "mscons"),
		slog.Int("messages", len(reps)), slog.Int("refused", refused),
		slog.Int("inserted", counts.Inserted), slog.Int("present", counts.Present), slog.Int("late", counts.Late),
		slog.Int("superseded", counts.Superseded), slog.Int("shadowed", counts.Shadowed)}
	if err != nil {
		attrs = append(attrs, slog.Any("err", err))
	}
	h.log.LogAttrs(ctx, slog.LevelInfo, "ingest", attrs...)
	switch {
	case err == nil && refused == 0:
		return ingestAnswer{http.StatusOK, counts}
	case err == nil:
		return ingestAnswer{http.StatusUnprocessableEntity, ingestError{Code: "refused", ingestCounts: counts,
			Error: fmt.Sprintf("%d of %d messages refused, nothing of them written; the others are written", refused, len(reps))}}
	}
	// Classified as every format's failure.
	if len(reps) > 0 {
		err = &pastFirstMessage{err}
	}
	status, eb := ingestFailure(err)
	if status == http.StatusInternalServerError {
		h.log.LogAttrs(ctx, slog.LevelError, "ingest failed", slog.String("table", table), slog.Any("err", err))
	}
	eb.ingestCounts = counts
	return ingestAnswer{status, eb}
}
