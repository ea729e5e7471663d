package cold

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// A fanout writes the Arrow record batches of one commit to the data files
// of a cold table: a file open for every partition its rows fall in, rolled
// over at the table's target file size. It is the Tier's own write path,
// in place of iceberg-go's, so that the Parquet writer's properties are the
// Tier's to choose (see fileProperties) and rows are split by partition
// only where the partition changes: a batch of one partition, as the
// encoder makes them, is written as it is.
type fanout struct {
	ctx    context.Context
	fs     icebergio.WriteFileIO
	schema *iceberg.Schema // the table's current schema
	spec   iceberg.PartitionSpec
	props  iceberg.Properties
	loc    table.LocationProvider
	parts  *partitioner
	file   fileProperties
	write  uuid.UUID
	opened int
	open   map[string]*dataWriter
	order  []string // keys of open, in the order they were opened
	done   []iceberg.DataFile

	// inOrder says the rows come month after month, as an archival and a
	// re-marking write them: the files of a month the rows have passed are
	// finished then, not at the end, so that a window across a month's end
	// holds the buffered row groups and column dictionaries of one month's
	// files, not of every month it touched.
	inOrder bool
	month   int32 // the latest month of the rows, once seen
	seen    bool
}

// A dataWriter writes one data file.
type dataWriter struct {
	path     string
	out      io.WriteCloser
	count    *countingWriter
	pw       *pqarrow.FileWriter
	month    int32 // of the partition, if the spec has a month field
	hasMonth bool
}

// newFanout returns a fanout for batches of arrow schema asc onto ice, whose
// files it creates through fs.
func newFanout(ctx context.Context, ice *table.Table, fs icebergio.WriteFileIO, asc *arrow.Schema) (*fanout, error) {
	loc, err := ice.LocationProvider()
	if err != nil {
		return nil, fmt.Errorf("location provider: %w", err)
	}
	spec := ice.Spec()
	parts, err := newPartitioner(spec, ice.Schema(), asc)
	if err != nil {
		return nil, err
	}
	fsc, err := fileSchema(ice.Schema(), asc)
	if err != nil {
		return nil, err
	}
	file, err := newFileProperties(ice.Properties(), fsc)
	if err != nil {
		return nil, err
	}
	return &fanout{ctx: ctx, fs: fs, schema: ice.Schema(), spec: spec, props: ice.Properties(), loc: loc,
		parts: parts, file: file, write: uuid.New(), open: map[string]*dataWriter{}}, nil
}

// add writes the rows of b to the files of their partitions.
func (f *fanout) add(b arrow.RecordBatch) error {
	for _, r := range f.parts.runs(b) {
		if err := f.pass(r); err != nil {
			return err
		}
		w, err := f.writer(r)
		if err != nil {
			return err
		}
		var rows arrow.RecordBatch
		if r.start > 0 || r.end < int(b.NumRows()) {
			cols := make([]arrow.Array, b.NumCols())
			for i, c := range b.Columns() {
				cols[i] = array.NewSlice(c, int64(r.start), int64(r.end))
			}
			rows = array.NewRecordBatch(f.file.arrow, cols, int64(r.end-r.start))
			for _, c := range cols {
				c.Release()
			}
		} else {
			rows = array.NewRecordBatch(f.file.arrow, b.Columns(), b.NumRows())
		}
		err = w.add(rows, f.file.rowGroupBytes)
		rows.Release()
		if err != nil {
			return fmt.Errorf("write %s: %w", w.path, err)
		}
		if w.size() >= f.file.targetSize {
			if err := f.finish(r.key); err != nil {
				return err
			}
		}
	}
	return nil
}

// fileSchema returns the Arrow schema of files with the columns of asc, in
// its order: their types, and the field ids and nullability of sc, the
// table's schema. Batches read back from files lack the field ids.
func fileSchema(sc *iceberg.Schema, asc *arrow.Schema) (*arrow.Schema, error) {
	names := make([]string, 0, asc.NumFields())
	for _, f := range asc.Fields() {
		names = append(names, f.Name)
	}
	sel, err := sc.Select(true, names...)
	if err != nil {
		return nil, err
	}
	have, err := table.SchemaToArrowSchema(sel, nil, true, false)
	if err != nil {
		return nil, err
	}
	fields := make([]arrow.Field, 0, len(names))
	for _, f := range asc.Fields() {
		idx := have.FieldIndices(f.Name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("column %q: not in the table's schema", f.Name)
		}
		want := have.Field(idx[0])
		if !arrow.TypeEqual(want.Type, f.Type) {
			return nil, fmt.Errorf("column %q: rows of type %s, the table's is %s", f.Name, f.Type, want.Type)
		}
		fields = append(fields, want)
	}
	return arrow.NewSchema(fields, nil), nil
}

// writer returns the open file of r's partition, opening one if there is
// none.
func (f *fanout) writer(r run) (*dataWriter, error) {
	if w, ok := f.open[r.key]; ok {
		return w, nil
	}
	name := fmt.Sprintf("%05d-0-%s-00000.parquet", f.opened, f.write)
	f.opened++
	path := f.loc.NewDataLocation(f.spec.PartitionToPath(r.values, f.schema) + "/" + name)
	out, err := f.fs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	count := &countingWriter{w: out}
	props := f.file.parquet
	if r.superseded {
		props = f.file.superseded
	}
	pw, err := pqarrow.NewFileWriter(f.file.arrow, count, props, f.file.arrowProps)
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	w := &dataWriter{path: path, out: out, count: count, pw: pw, month: r.month, hasMonth: r.hasMonth}
	f.open[r.key] = w
	f.order = append(f.order, r.key)
	return w, nil
}

// finish closes the file open under key and makes its data file.
func (f *fanout) finish(key string) error {
	w := f.open[key]
	delete(f.open, key)
	if err := w.close(); err != nil {
		return err
	}
	// The footer is read back for the statistics, through iceberg-go, so
	// that the data file's bounds are those its own writer would give.
	df, err := table.FileToDataFile(f.ctx, f.fs, w.path, f.schema, f.spec, 0, f.props)
	if err != nil {
		return fmt.Errorf("data file %s: %w", w.path, err)
	}
	f.done = append(f.done, df)
	return nil
}

// pass finishes the open files of months before r's, if the rows come in
// order: no later row falls in them. Rows that did would only open another
// file of their partition.
func (f *fanout) pass(r run) error {
	if !f.inOrder || !r.hasMonth || f.seen && r.month <= f.month {
		return nil
	}
	f.month, f.seen = r.month, true
	for _, key := range f.order {
		if w, ok := f.open[key]; ok && w.hasMonth && w.month < r.month {
			if err := f.finish(key); err != nil {
				return err
			}
		}
	}
	return nil
}

// close finishes every open file, in the order they were opened, and
// returns the data files written.
func (f *fanout) close() ([]iceberg.DataFile, error) {
	for _, key := range f.order {
		if _, ok := f.open[key]; !ok {
			continue
		}
		if err := f.finish(key); err != nil {
			return nil, err
		}
	}
	f.order = nil
	return f.done, nil
}

// abort closes the files still open without finishing them: the commit
// deletes every file it created.
func (f *fanout) abort() {
	for key, w := range f.open {
		w.out.Close()
		delete(f.open, key)
	}
}

func (w *dataWriter) add(b arrow.RecordBatch, rowGroupBytes int64) error {
	// A new row group before rows that would grow a full one, not after:
	// closing right after would leave an empty row group at the end.
	if w.pw.RowGroupTotalBytesWritten() >= rowGroupBytes {
		if err := w.pw.NewBufferedRowGroupChecked(); err != nil {
			return err
		}
	}
	return w.pw.WriteBuffered(b)
}

// size estimates the file's size: what was written, and the row group
// buffered.
func (w *dataWriter) size() int64 {
	return w.count.n + w.pw.RowGroupTotalCompressedBytes()
}

func (w *dataWriter) close() error {
	if err := w.pw.Close(); err != nil {
		w.out.Close()
		return fmt.Errorf("close %s: %w", w.path, err)
	}
	if err := w.out.Close(); err != nil {
		return fmt.Errorf("close %s: %w", w.path, err)
	}
	return nil
}

// A countingWriter counts the bytes written through it. It hides the
// file's Close from the Parquet writer, which would otherwise close it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// intProperty returns the integer property key of props, or def.
func intProperty(props iceberg.Properties, key string, def int64) (int64, error) {
	v, ok := props[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("table property %s=%q: %w", key, v, err)
	}
	return n, nil
}

// writeFiles writes the batches of s to data files of ice, created through
// fs. The batches are made on a goroutine of their own, a batch or two
// ahead of the Parquet writer, so that making rows and encoding them share
// the cores.
func writeFiles(ctx context.Context, ice *table.Table, fs icebergio.WriteFileIO, s *records) (_ []iceberg.DataFile, err error) {
	f, err := newFanout(ctx, ice, fs, s.schema)
	if err != nil {
		return nil, err
	}
	f.inOrder = s.enc != nil && s.enc.order != nil // checked by keyOrder as they come
	defer func() {
		if err != nil {
			f.abort()
		}
	}()
	type item struct {
		b   arrow.RecordBatch
		err error
	}
	ch := make(chan item, 1)
	stop := make(chan struct{})
	go func() {
		defer close(ch)
		for b, err := range s.count() {
			select {
			case ch <- item{b, err}:
			case <-stop:
				if b != nil {
					b.Release()
				}
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		close(stop)
		for it := range ch {
			if it.b != nil {
				it.b.Release()
			}
		}
	}()
	for it := range ch {
		if it.err != nil {
			return nil, it.err
		}
		err := f.add(it.b)
		it.b.Release()
		if err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return f.close()
}
