package hotbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/meterstore/meterstore/internal/ingest"
	"github.com/meterstore/meterstore/series"
)

// The ingest variants: a batch encoded as a delivery file, then decoded and
// written as `meterstore ingest` does, each into a hot table of its own
// with exclusion constraints. Encoding is not timed; decoding is.
const (
	// CSVIngest decodes a CSV delivery and writes it in atomic batches
	// of ingest.DefaultBatchRows, `meterstore ingest`'s default.
	CSVIngest = "ingest CSV"
	// MSCONSIngest decodes an MSCONS interchange and writes it as
	// ingest.RunMSCONS does: consecutive messages (a meter-day each, the
	// unit of atomicity) share a write of up to ingest.DefaultBatchRows,
	// the groups written as a stream.
	MSCONSIngest = "ingest MSCONS"
)

// FormatVariants are the variants of a comparison of delivery formats.
var FormatVariants = []string{CSVIngest, MSCONSIngest}

// ingestTables are the tables of the ingest variants.
var ingestTables = map[string]string{CSVIngest: "lastgang_csv", MSCONSIngest: "lastgang_mscons"}

// encode returns batch as variant v's delivery, or nil for a variant that
// writes readings; n numbers the batch.
func (s *Setup) encode(v string, batch []series.Reading, n int) ([]byte, error) {
	switch v {
	case CSVIngest:
		return EncodeCSV(nil, batch), nil
	case MSCONSIngest:
		return EncodeMSCONS(batch, fmt.Sprintf("B%d", n))
	}
	return nil, nil
}

// ingest decodes and writes the delivery data of variant v, which must
// hold want readings, all of them stored.
func (s *Setup) ingest(ctx context.Context, v string, data []byte, want int) error {
	t := s.tables[v]
	write := func(ctx context.Context, rows []series.Reading) ([]series.Status, int, error) {
		res, err := s.tier.Write(ctx, t, rows)
		return res.Status, 0, err
	}
	// As `meterstore ingest` does, the next batch or group of messages is
	// decoded and prepared while one is written.
	stream := func(ctx context.Context, next func() ([]series.Reading, error), done func([]series.Status, int, error) error) error {
		return s.tier.WriteEach(ctx, t, next, func(res series.Result, err error) error { return done(res.Status, 0, err) })
	}
	var got int
	switch v {
	case CSVIngest:
		d, err := ingest.NewDecoder(bytes.NewReader(data), ingest.CSV, t)
		if err != nil {
			return err
		}
		sum, err := ingest.RunStream(ctx, d, stream, ingest.Options{})
		if err != nil {
			return err
		}
		got = sum.Records
	case MSCONSIngest:
		reps, err := ingest.RunMSCONS(ctx, bytes.NewReader(data), t, write, ingest.MSCONSOptions{Stream: stream})
		if err != nil {
			return err
		}
		for _, r := range reps {
			if r.Err != nil {
				return fmt.Errorf("message %d %q refused: %w", r.Number, r.Ref, r.Err)
			}
			got += r.Readings
		}
	default:
		return fmt.Errorf("hotbench: %q is no ingest variant", v)
	}
	if got != want {
		return fmt.Errorf("hotbench: %s: %d readings written of %d", v, got, want)
	}
	return nil
}

// ErrDiffer is the error of Same when two variants stored different
// readings.
var ErrDiffer = errors.New("hotbench: the variants stored different readings")

// Same returns an error wrapping ErrDiffer unless variants a and b, hot or
// ingest variants, stored the same readings: the same count and sum of
// values, and no reading (location, OBIS code, interval, value, unit,
// quality, resolution, version and scope) in one and not the other.
func (s *Setup) Same(ctx context.Context, a, b string) error {
	ta, tb := s.tables[a], s.tables[b]
	if ta == nil || tb == nil {
		return fmt.Errorf("hotbench: %q or %q stores no hot table", a, b)
	}
	// Read with the natural columns, whichever layout each table has.
	na, err := s.tier.Natural(ctx, ta)
	if err != nil {
		return err
	}
	nb, err := s.tier.Natural(ctx, tb)
	if err != nil {
		return err
	}
	const cols = `malo_id, obis_code, "from", "to", value, unit, quality, resolution, version, version_scope`
	var ca, cb, only int64
	var sa, sb string
	na, nb = na+" a", nb+" b"
	err = s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM `+na+`), (SELECT coalesce(sum(value), 0)::text FROM `+na+`),
		(SELECT count(*) FROM `+nb+`), (SELECT coalesce(sum(value), 0)::text FROM `+nb+`),
		(SELECT count(*) FROM ((SELECT `+cols+` FROM `+na+` EXCEPT ALL SELECT `+cols+` FROM `+nb+`)
			UNION ALL (SELECT `+cols+` FROM `+nb+` EXCEPT ALL SELECT `+cols+` FROM `+na+`)) d)`).
		Scan(&ca, &sa, &cb, &sb, &only)
	if err != nil {
		return fmt.Errorf("hotbench: comparing %s and %s: %w", a, b, err)
	}
	if ca != cb || sa != sb || only != 0 {
		return fmt.Errorf("%w: %s %d readings summing to %s, %s %d summing to %s, %d in only one of them",
			ErrDiffer, a, ca, sa, b, cb, sb, only)
	}
	return nil
}
