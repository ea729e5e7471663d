package servebench

import (
	"bytes"
	"encoding/csv"
	"strconv"
	"time"

	"github.com/meterstore/meterstore/series"
)

// csvHeader names the columns encodeCSV writes, as meterstore ingest and
// POST /v1/tables/{table}/readings read them.
var csvHeader = []string{"malo_id", "obis_code", "sparte", "from", "to", "value", "unit",
	"quality", "resolution", "version", "version_scope"}

// encodeCSV returns batch as a CSV delivery with a header line. Values
// are written as the server's decoder parses them, so that the bench
// measures the server reading a delivery, not a lossy encoding.
func encodeCSV(batch []series.Reading) []byte {
	var b bytes.Buffer
	b.Grow(len(batch) * 130)
	w := csv.NewWriter(&b)
	w.Write(csvHeader)
	rec := make([]string, len(csvHeader))
	for i := range batch {
		r := &batch[i]
		rec[0], rec[1], rec[2] = r.MaLo, r.OBIS, r.Commodity.String()
		rec[3], rec[4] = r.From.Format(time.RFC3339), r.To.Format(time.RFC3339)
		rec[5], rec[6], rec[7] = r.Value.String(), r.Unit.String(), r.Quality.String()
		rec[8], rec[9], rec[10] = r.Resolution.String(), strconv.FormatUint(r.Version, 10), r.VersionScope
		w.Write(rec)
	}
	// Writing to a bytes.Buffer fails only by running out of memory.
	w.Flush()
	return b.Bytes()
}
