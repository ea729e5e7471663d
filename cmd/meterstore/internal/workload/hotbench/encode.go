package hotbench

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// csvHeader names the columns EncodeCSV writes, those `meterstore ingest`
// reads of an interval table.
const csvHeader = "malo_id,obis_code,from,to,value,unit,quality,resolution,version,version_scope\n"

// EncodeCSV appends batch as a CSV delivery, a header and a line per
// reading, as `meterstore ingest` reads it.
func EncodeCSV(buf []byte, batch []series.Reading) []byte {
	buf = append(buf, csvHeader...)
	for i := range batch {
		r := &batch[i]
		buf = append(buf, r.MaLo...)
		buf = append(buf, ',')
		buf = append(buf, r.OBIS...)
		buf = append(buf, ',')
		buf = r.From.UTC().AppendFormat(buf, time.RFC3339)
		buf = append(buf, ',')
		buf = r.To.UTC().AppendFormat(buf, time.RFC3339)
		buf = append(buf, ',')
		buf = appendDecimal(buf, r.Value)
		buf = append(buf, ',')
		buf = append(buf, r.Unit.String()...)
		buf = append(buf, ',')
		buf = append(buf, r.Quality.String()...)
		buf = append(buf, ',')
		buf = append(buf, r.Resolution.String()...)
		buf = append(buf, ',')
		buf = strconv.AppendUint(buf, r.Version, 10)
		buf = append(buf, ',')
		buf = append(buf, r.VersionScope...)
		buf = append(buf, '\n')
	}
	return buf
}

// EncodeMSCONS returns batch as an MSCONS 2.4c interchange with a message
// per run of readings of one series and delivery (market location, OBIS
// code, version and scope), as a metering point operator sends a day of
// load profiles: the sender of NAD+MS is the operator of the version
// scope and the document time of DTM+137 is the version, so that the
// reader derives the same version and scope the readings carry. The
// interval dates are in UTC (format 303, offset +00).
func EncodeMSCONS(batch []series.Reading, ref string) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(len(batch) * 80)
	fmt.Fprintf(&b, "UNA:+.? 'UNB+UNOC:3+%s:500+9900000000010:500+260101:0000+%s++TL'", sender(batch), ref)
	msgs := 0
	for i := 0; i < len(batch); {
		first := &batch[i]
		j := i + 1
		for j < len(batch) && sameDelivery(&batch[j], first) {
			j++
		}
		op, _, ok := strings.Cut(first.VersionScope, ":")
		if !ok || op == "" {
			return nil, fmt.Errorf("hotbench: version scope %q names no network operator", first.VersionScope)
		}
		if first.Resolution != metering.QuarterHour || first.Unit != metering.KilowattHour {
			return nil, fmt.Errorf("hotbench: MSCONS encoding of %s readings in %s: want quarter hours in kWh", first.Resolution, first.Unit)
		}
		msgs++
		segs := 0
		seg := func(format string, args ...any) {
			fmt.Fprintf(&b, format, args...)
			b.WriteByte('\'')
			segs++
		}
		v := strconv.FormatUint(first.Version, 10)
		if len(v) != 14 {
			return nil, fmt.Errorf("hotbench: version %s is no document time YYYYMMDDhhmmss", v)
		}
		seg("UNH+M%d+MSCONS:D:04B:UN:2.4c", msgs)
		seg("BGM+7+%s-%d+9", ref, msgs)
		seg("DTM+137:%s?+00:304", v)
		seg("NAD+MS+%s::293", escape(op))
		seg("UNS+D")
		seg("NAD+DP")
		seg("LOC+172+%s", escape(first.MaLo))
		seg("LIN+1")
		seg("PIA+5+%s:SRW", escape(first.OBIS))
		var num []byte
		for k := i; k < j; k++ {
			r := &batch[k]
			if !r.Quality.Valid() {
				return nil, fmt.Errorf("hotbench: reading %d has no quality", k)
			}
			num = appendDecimal(num[:0], r.Value)
			seg("QTY+%s:%s:KWH", r.Quality, num)
			seg("DTM+163:%s?+00:303", r.From.UTC().Format("200601021504"))
			seg("DTM+164:%s?+00:303", r.To.UTC().Format("200601021504"))
		}
		seg("UNT+%d+M%d", segs+1, msgs)
		i = j
	}
	fmt.Fprintf(&b, "UNZ+%d+%s'", msgs, ref)
	return b.Bytes(), nil
}

// sameDelivery reports whether r belongs in the message of first.
func sameDelivery(r, first *series.Reading) bool {
	return r.MaLo == first.MaLo && r.OBIS == first.OBIS && r.Version == first.Version && r.VersionScope == first.VersionScope
}

// sender is the operator of the batch's first reading, the interchange
// sender; any market partner id will do for the reader.
func sender(batch []series.Reading) string {
	if len(batch) == 0 {
		return "9900000000003"
	}
	op, _, _ := strings.Cut(batch[0].VersionScope, ":")
	return escape(op)
}

// escape releases the separators of UNA:+.? ' with '?'.
func escape(s string) string {
	if !strings.ContainsAny(s, ":+?'") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(":+?'", s[i]) >= 0 {
			b.WriteByte('?')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// appendDecimal appends d without the trailing zeros of its fraction, as
// deliveries write values (Wh: three places).
func appendDecimal(buf []byte, d series.Decimal) []byte {
	s := d.String()
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	return append(buf, s...)
}
