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

// TestCSVRowRepeats: a CSVRow that appends a column's field of the row
// before again where the value repeats writes what encoding/csv writes
// for rows that repeat some values and change others, a repeated date of
// another location (another day) and a value of a type it does not keep
// among them.
func TestCSVRowRepeats(t *testing.T) {
	types := []string{"VARCHAR", "TIMESTAMP WITH TIME ZONE", "DATE", "DECIMAL(18,6)", "BIGINT", "VARCHAR", "VARCHAR"}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 3, 28, 23, 30, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(3, 4))
	var rows [][]any
	for i := range 500 {
		pick := func(vs ...any) any { return vs[rng.IntN(len(vs))] }
		rows = append(rows, []any{
			pick("a", "a,b", "", nil, " x"),
			pick(day, day.Add(time.Duration(i)*time.Minute)),
			pick(day, day.In(berlin)),
			pick(FixedInt(1, 6), FixedInt(-1, 6), FixedInt(int64(i), 6)),
			pick(int64(1), int64(i), int32(1), nil),
			pick([]byte("ab"), []byte("a\"b"), 1.5),
			pick("", nil),
		})
	}
	var want bytes.Buffer
	w := csv.NewWriter(&want)
	var c CSVRow
	var got []byte
	for i, r := range rows {
		if err := w.Write(Cells(r, types)); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		got = c.Append(got, r, types)
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("row %d %v: %q, encoding/csv writes %q", i, r, got[bytes.LastIndexByte(got[:len(got)-1], '\n')+1:],
				want.Bytes()[bytes.LastIndexByte(want.Bytes()[:want.Len()-1], '\n')+1:])
		}
	}
}
