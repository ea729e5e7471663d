package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/meterstore/meterstore/internal/edifact"
	"github.com/meterstore/meterstore/internal/mscons"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// MaxInterchangeBytes bounds an MSCONS interchange: its envelope counts
// are checked before any message is written, so it is read whole.
const MaxInterchangeBytes = 512 << 20

// Sniff reports the format the start of a delivery shows: MSCONS when it
// begins with UNA or UNB, after an optional byte order mark.
func Sniff(head []byte) (Format, bool) {
	head = bytes.TrimPrefix(head, []byte(bom))
	if bytes.HasPrefix(head, []byte("UNA")) || bytes.HasPrefix(head, []byte("UNB")) {
		return MSCONS, true
	}
	return 0, false
}

// A MessageReport says what became of one MSCONS message.
type MessageReport struct {
	Number   int    // the message's place in the interchange, from 1
	Ref      string // the message reference of UNH
	Document string // the document number of BGM
	Readings int
	// Inserted, Present and Late count the readings written: new, already
	// stored (a redelivery), and gone to the cold tier as late corrections.
	Inserted, Present, Late int
	// Err, if not nil, refused the message: none of its readings is
	// written. It is an *edifact.MessageError when the message broke a
	// rule, or the store's refusal of its readings.
	Err error
}

// MSCONSOptions configure RunMSCONS.
type MSCONSOptions struct {
	// MaLoOf maps metering location ids to their market locations.
	MaLoOf map[string]string
}

// RunMSCONS reads an MSCONS interchange and writes each message's
// readings in one atomic batch. A message that breaks a rule or that the
// store refuses is reported and the others are written. The error is
// for what refuses the rest: a broken interchange envelope (nothing
// written), or a write that failed for another reason than the message's
// content, such as an unreachable server (the reports say which messages
// were written before it).
func RunMSCONS(ctx context.Context, r io.Reader, t *series.Table, write WriteFunc, opts MSCONSOptions) ([]MessageReport, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInterchangeBytes+1))
	if err != nil {
		return nil, fmt.Errorf("ingest: read interchange: %w", err)
	}
	if len(data) > MaxInterchangeBytes {
		return nil, fmt.Errorf("ingest: an interchange of more than %d bytes; split it", MaxInterchangeBytes)
	}
	ic, err := edifact.Parse(bytes.TrimPrefix(data, []byte(bom)))
	if err != nil {
		return nil, fmt.Errorf("interchange refused, nothing written: %w", err)
	}
	msgs, err := mscons.Read(ic, mscons.Options{Table: t, MaLoOf: opts.MaLoOf})
	if err != nil {
		return nil, err
	}
	reps := make([]MessageReport, 0, len(msgs))
	for _, m := range msgs {
		rep := MessageReport{Number: m.Number, Ref: m.Ref, Document: m.Document, Readings: len(m.Readings)}
		switch {
		case m.Err != nil:
			rep.Err = m.Err
		case len(m.Readings) > MaxBatchRows:
			rep.Err = fmt.Errorf("%d readings in one message, more than a batch holds (%d)", len(m.Readings), MaxBatchRows)
		default:
			status, late, err := write(ctx, m.Readings)
			var se *series.Error
			if err != nil && (!errors.As(err, &se) || se.Kind != series.IntegrityViolation && se.Kind != series.InvalidInput) {
				return reps, fmt.Errorf("message %d %q: %w", m.Number, m.Ref, err)
			}
			if err != nil {
				rep.Err = messageError(err, m.Segments)
				break
			}
			rep.Late = late
			for _, s := range status {
				switch s {
				case series.Inserted:
					rep.Inserted++
				case series.Present:
					rep.Present++
				}
			}
		}
		reps = append(reps, rep)
	}
	return reps, nil
}

// messageError names the QTY segments of the rows the store refused.
func messageError(err error, segs []int) error {
	var se *series.Error
	if !errors.As(err, &se) || len(se.Problems) == 0 {
		return err
	}
	var b strings.Builder
	for i, p := range se.Problems {
		if i == 10 {
			fmt.Fprintf(&b, "; and %d more", len(se.Problems)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		reason := p.RenameRow(func(i int) (string, bool) {
			if i < 0 || i >= len(segs) {
				return "", false
			}
			return fmt.Sprintf("segment %d", segs[i]), true
		})
		if p.Row >= 0 && p.Row < len(segs) {
			fmt.Fprintf(&b, "segment %d (QTY): ", segs[p.Row])
		}
		b.WriteString(reason)
	}
	return &refusal{text: fmt.Sprintf("%s (%s)", b.String(), se.Kind), err: err}
}

// A refusal is the store's refusal of a message, its rows renamed to the
// message's segments.
type refusal struct {
	text string
	err  error
}

func (r *refusal) Error() string { return r.text }
func (r *refusal) Unwrap() error { return r.err }

// ReadRelations reads a CSV of melo_id,malo_id (a header, then one
// relation per line) into a map from metering to market location.
func ReadRelations(r io.Reader) (map[string]string, error) {
	cr := csv.NewReader(bufio.NewReader(r))
	cr.FieldsPerRecord = 2
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("ingest: relations: %w", err)
	}
	if strings.TrimPrefix(head[0], bom) != "melo_id" || head[1] != "malo_id" {
		return nil, fmt.Errorf("ingest: relations: header %q: want melo_id,malo_id", strings.Join(head, ","))
	}
	out := map[string]string{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("ingest: relations: %w", err)
		}
		line, _ := cr.FieldPos(0)
		if _, err := metering.ParseMeLo(rec[0]); err != nil {
			return nil, fmt.Errorf("ingest: relations: line %d: %w", line, err)
		}
		if _, err := metering.ParseMaLo(rec[1]); err != nil {
			return nil, fmt.Errorf("ingest: relations: line %d: %w", line, err)
		}
		if prev, ok := out[rec[0]]; ok && prev != rec[1] {
			return nil, fmt.Errorf("ingest: relations: line %d: %s belongs to %s and %s", line, rec[0], prev, rec[1])
		}
		out[rec[0]] = rec[1]
	}
}
