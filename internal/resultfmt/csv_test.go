package resultfmt

import (
	"bytes"
	"encoding/csv"
	"math/rand/v2"
	"testing"
	"time"
)

// TestCSVRowAsWriter: CSVRow renders every row byte for byte as
// encoding/csv's Writer writes its Cells: fields that need quotes (a
// quote, comma, CR, LF, \., a leading space of any kind) and those that
// do not, NULLs, times, decimals, integers, random bytes.
func TestCSVRowAsWriter(t *testing.T) {
	fixed := []string{"", `\.`, `\.x`, `a\.`, " a", "a ", "\ta", "\u00a0a", "\u2028", "a,b", `a"b`, `"`, "a\nb", "a\rb", "\r\n",
		"plain", "1-1:1.29.0", "ä", "\xff", ",", "x\"\"y"}
	types := []string{"VARCHAR", "TIMESTAMP WITH TIME ZONE", "DECIMAL(18,6)", "BIGINT", "DATE", "VARCHAR"}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab ,\"\r\n\\.\t\xc2\xa0\xff1")
	random := func() string {
		b := make([]byte, rng.IntN(6))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	var rows [][]any
	for _, f := range fixed {
		rows = append(rows, []any{f, nil, FixedInt(-1234567, 6), int64(-5), time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC), f + f})
	}
	for range 2000 {
		rows = append(rows, []any{random(), time.UnixMicro(rng.Int64N(1 << 50)), FixedInt(rng.Int64(), 6), rng.Int64(), nil, random()})
	}
	var want bytes.Buffer
	w := csv.NewWriter(&want)
	var c CSVRow
	var got []byte
	for _, r := range rows {
		if err := w.Write(Cells(r, types)); err != nil {
			t.Fatal(err)
		}
		got = c.Append(got, r, types)
	}
	w.Flush()
	if !bytes.Equal(got, want.Bytes()) {
		g, wl := bytes.Split(got, []byte("\n")), bytes.Split(want.Bytes(), []byte("\n"))
		for i := range min(len(g), len(wl)) {
			if !bytes.Equal(g[i], wl[i]) {
				t.Fatalf("line %d: %q, encoding/csv writes %q", i, g[i], wl[i])
			}
		}
		t.Fatalf("%d bytes, encoding/csv writes %d", len(got), want.Len())
	}
	var header []byte
	for i, f := range fixed {
		if i > 0 {
			header = append(header, ',')
		}
		header = AppendCSVField(header, f)
	}
	want.Reset()
	w.Write(fixed)
	w.Flush()
	if string(header)+"\n" != want.String() {
		t.Errorf("header %q, encoding/csv writes %q", header, want.String())
	}
}
