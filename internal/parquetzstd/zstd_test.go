package parquetzstd

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/klauspost/compress/zstd"
)

// arrowCodec is arrow-go's own zstd codec, taken from its registry before
// any test registers this one.
var arrowCodec, _ = compress.GetCodec(compress.Codecs.Zstd)

// page returns n bytes that compress about as a Parquet page of
// dictionary indexes does: random, over a small alphabet.
func page(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.IntN(40))
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	plain, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for _, n := range []int{1, 1000, 128 << 10, 3 << 20} {
		src := page(n)
		for _, lvl := range []int{compress.DefaultCompressionLevel, 1, 3, 9, 19} {
			enc := c.EncodeLevel(nil, src, lvl)
			// An ordinary frame: zstd's default decoder reads it.
			got, err := plain.DecodeAll(enc, nil)
			if err != nil || !bytes.Equal(got, src) {
				t.Fatalf("%d bytes at level %d: decoded %d bytes, %v", n, lvl, len(got), err)
			}
			got, err = c.DecodeWithError(nil, enc)
			if err != nil || !bytes.Equal(got, src) {
				t.Fatalf("%d bytes at level %d: the codec decoded %d bytes, %v", n, lvl, len(got), err)
			}
		}
	}
	if _, err := c.DecodeWithError(nil, []byte("not zstd")); err == nil {
		t.Error("decoding garbage: no error")
	}
}

// allocated returns the bytes allocated while compressing a 512 KiB page
// ten times, with two garbage collections before each.
func allocated(c compress.Codec) uint64 {
	src := page(512 << 10)
	dst := make([]byte, 0, len(src))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		runtime.GC()
		runtime.GC()
		dst = c.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
	}
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestEncodersOutliveCollection compares the bytes allocated for pages
// compressed between garbage collections by arrow-go's codec and by this
// one: arrow-go's pool loses its encoders to the collector, and each new
// one allocates an 8 MiB history.
func TestEncodersOutliveCollection(t *testing.T) {
	theirs := arrowCodec
	if _, ok := theirs.(*Codec); ok || theirs == nil {
		t.Fatalf("arrow-go's codec is %T", theirs)
	}
	if err := Register(); err != nil {
		t.Fatal(err)
	}
	ours, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ours.(*Codec); !ok {
		t.Fatalf("after Register the registry holds %T", ours)
	}
	a, b := allocated(theirs), allocated(ours)
	t.Logf("allocated for ten pages: arrow-go's codec %d bytes, this one %d", a, b)
	if a < 40<<20 {
		t.Errorf("arrow-go's codec allocated %d bytes: the comparison no longer shows what it is for", a)
	}
	if b > 4<<20 {
		t.Errorf("this codec allocated %d bytes for ten pages, want at most one history and the outputs", b)
	}
}

// TestRegisterOnce checks that a second Register keeps the codec the first
// one registered: readers and writers that already hold it share its
// encoders with those that look it up later.
func TestRegisterOnce(t *testing.T) {
	if err := Register(); err != nil {
		t.Fatal(err)
	}
	first, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	if err := Register(); err != nil {
		t.Fatal(err)
	}
	again, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	if first != again {
		t.Errorf("a second Register replaced the codec: %p, then %p", first, again)
	}
}

// TestParquet writes a Parquet file compressed by the registered codec and
// reads it back.
func TestParquet(t *testing.T) {
	if err := Register(); err != nil {
		t.Fatal(err)
	}
	sc := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	r := rand.New(rand.NewPCG(3, 4))
	for range 300_000 {
		b.Append(r.Int64N(500))
	}
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(sc, []arrow.Array{col}, int64(col.Len()))
	defer rec.Release()

	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tbl, err := pqarrow.ReadTable(t.Context(), bytes.NewReader(buf.Bytes()), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	got := tbl.Column(0).Data()
	if got.Len() != col.Len() {
		t.Fatalf("read %d values, wrote %d", got.Len(), col.Len())
	}
	i := 0
	for _, c := range got.Chunks() {
		for _, v := range c.(*array.Int64).Int64Values() {
			if v != col.(*array.Int64).Value(i) {
				t.Fatalf("value %d: read %d, wrote %d", i, v, col.(*array.Int64).Value(i))
			}
			i++
		}
	}
}
