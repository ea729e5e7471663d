package query

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/meterstore/meterstore/series"
)

// Copies of the hot tier's day sums.
//
// The hot tier keeps the day sums of its partitions (hot.Read.ScanDays),
// but a read of daily still takes them across the wire, one row a series
// and partition, every time: on a fleet's week of hot days the larger
// part of the read. The partitions no write touched since their sums were
// stored change only when a correction arrives, so the engine keeps a
// Parquet copy of each such partition's sums in CacheDir, named by the
// token PostgreSQL drew for those sums (see HotDayTokens): a read takes
// the copy only where its own snapshot shows the partition's sums whole
// under that token, and reads every other partition from PostgreSQL as
// before. A copy is written after the statement that missed it, from a
// snapshot of its own that shows the same token; a copy no read used for
// dayCopyIdle is removed.
//
// The cold tier's rows below W of the day that straddles it are summed
// beside the hot tier's: few rows, but in files of whole days, which a
// read of daily would scan every time. Those files are immutable and the
// SELECT that sums them names them and every condition on their rows, so
// a copy of its result, named by a hash of its text, is read in its
// place, written and removed like the others.

// dayCopyDir is the subdirectory of CacheDir the copies are kept in.
const dayCopyDir = "hot-days"

// dayCopyIdle is how long a copy stays unused before a fill removes it:
// long past any statement that planned with it, as the days of a hot
// window are read again and again.
const dayCopyIdle = time.Hour

// dayCopyTimeout bounds the writing of one copy.
const dayCopyTimeout = time.Minute

// dayCopies keeps the copies of one engine; the zero dir keeps none.
type dayCopies struct {
	dir         string
	memoryLimit string // DuckDB's, of the engine's settings
	log         *slog.Logger

	mu      sync.Mutex // orders uses (touches) and removals
	filling map[string]bool
	wg      sync.WaitGroup
}

// newDayCopies returns the copies kept in s.CacheDir, none if it is
// empty.
func newDayCopies(s Settings) *dayCopies {
	c := &dayCopies{memoryLimit: s.MemoryLimit, log: s.Logger, filling: map[string]bool{}}
	if c.log == nil {
		c.log = slog.Default()
	}
	if s.CacheDir != "" {
		c.dir = filepath.Join(s.CacheDir, dayCopyDir)
	}
	return c
}

// A dayCopy is one copy a statement wants: of a hot partition's sums,
// the unit's token and the columns they are in, or of the cold tier's,
// the SELECT that sums them; the table it is of, and where it is kept.
type dayCopy struct {
	table string
	cols  []HotColumn
	tok   DayToken
	sql   string
	path  string
}

// path returns where the copy of the sums of tok, of table in columns
// cols, is kept: the name hashes all of them, so a copy of other columns
// (the table's identity columns evolved) is another file.
func (c *dayCopies) path(table string, cols []HotColumn, tok DayToken) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%d", table, tok.Token, tok.From.UnixMicro(), tok.To.UnixMicro())
	for _, col := range cols {
		fmt.Fprintf(h, "\x00%s\x00%d", col.Name, col.Kind)
	}
	return filepath.Join(c.dir, hex.EncodeToString(h.Sum(nil)[:16])+".parquet")
}

// take returns the copies of toks the statement can read now and the
// units they serve, and those it misses. A copy taken is touched, so that
// no fill removes it while the statement runs.
func (c *dayCopies) take(table string, cols []HotColumn, toks []DayToken) (files []string, units []int, missed []dayCopy) {
	if c.dir == "" {
		return nil, nil, nil
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range toks {
		if t.To.IsZero() {
			continue // a partition without an end may grow
		}
		p := c.path(table, cols, t)
		if os.Chtimes(p, now, now) == nil {
			files, units = append(files, p), append(units, t.Unit)
			continue
		}
		missed = append(missed, dayCopy{table: table, cols: cols, tok: t, path: p})
	}
	return files, units, missed
}

// coldCopyPrefix begins the names of the copies of cold day sums.
const coldCopyPrefix = "cold-"

// takeCold returns the copy of the cold day sums the SELECT sums
// selects, touched, if there is one, else the copy missed; none for a
// SELECT that reads more than files. The SELECT names the files it reads,
// which are immutable, and every condition on their rows: its text names
// its result.
func (c *dayCopies) takeCold(table, sums string) (file string, missed *dayCopy, ok bool) {
	if c.dir == "" || strings.Contains(sums, "meterstore_hot_") {
		return "", nil, false
	}
	h := sha256.New()
	fmt.Fprintf(h, "cold\x00%s\x00%s", table, sums)
	p := filepath.Join(c.dir, coldCopyPrefix+hex.EncodeToString(h.Sum(nil)[:16])+".parquet")
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if os.Chtimes(p, now, now) == nil {
		return p, nil, true
	}
	return "", &dayCopy{table: table, sql: sums, path: p}, false
}

// fill writes the copies missed in the background, each unless one is
// being written, through src.
func (c *dayCopies) fill(src Source, missed []dayCopy) {
	c.mu.Lock()
	var todo []dayCopy
	for _, m := range missed {
		if !c.filling[m.path] {
			c.filling[m.path] = true
			todo = append(todo, m)
		}
	}
	c.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for _, m := range todo {
			ctx, cancel := context.WithTimeout(context.Background(), dayCopyTimeout)
			err := c.write(ctx, src, m)
			cancel()
			switch {
			case errors.Is(err, errMovedOn):
				c.log.Debug("query: no copy of the hot day sums", "table", m.table, "from", m.tok.From, "err", err)
			case err != nil && m.sql != "":
				c.log.Warn("query: no copy of the cold day sums", "table", m.table, "err", err)
			case err != nil:
				c.log.Warn("query: no copy of the hot day sums", "table", m.table, "from", m.tok.From, "err", err)
			}
			c.mu.Lock()
			delete(c.filling, m.path)
			c.mu.Unlock()
		}
		c.removeIdle()
	}()
}

// errMovedOn says that the sums a copy was wanted of are no longer the
// partition's, or not whole, in the snapshot the copy would be read in.
var errMovedOn = errors.New("the partition's day sums moved on")

// write writes the copy m: the cold sums of m.sql, or the hot sums of
// m.tok, which it reads in a snapshot of their own, only if that snapshot
// shows the partition's sums whole under the same token: then they are
// the sums the token names.
func (c *dayCopies) write(ctx context.Context, src Source, m dayCopy) (err error) {
	if m.sql != "" {
		inst, err := start(ctx, Settings{MemoryLimit: c.memoryLimit}, 1)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, inst.close()) }()
		return c.copyTo(ctx, inst, m.sql, m.path, nil)
	}
	snap, err := src.HotSnapshot(ctx, 1)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, snap.Close()) }()
	r, err := src.HotRead(ctx, snap, series.Range{From: m.tok.From, To: m.tok.To})
	if err != nil {
		return err
	}
	dr, ok := r.(HotDayTokens)
	if !ok {
		return errMovedOn
	}
	toks, err := dr.DayTokens(ctx, m.tok.From)
	if err != nil {
		return err
	}
	if len(toks) != 1 || toks[0].Token != m.tok.Token || !toks[0].From.Equal(m.tok.From) || !toks[0].To.Equal(m.tok.To) {
		return errMovedOn
	}
	inst, err := start(ctx, Settings{MemoryLimit: c.memoryLimit}, 1)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, inst.close()) }()
	scan := &hotScan{read: r, threads: 1}
	cols, ok, err := scan.days("meterstore_day_copy", m.tok.From)
	switch {
	case err != nil:
		return err
	case !ok || !slices.Equal(cols, m.cols):
		return errMovedOn
	}
	const sel = `SELECT * FROM meterstore_day_copy()`
	if _, err := scan.register(inst.conn, sel); err != nil {
		return err
	}
	return c.copyTo(ctx, inst, sel, m.path, scan.failed)
}

// copyTo writes the result of sel in inst to path, through a file of its
// own renamed once whole; failed, if set, gives the error of a table
// function sel read, which DuckDB reports only as text.
func (c *dayCopies) copyTo(ctx context.Context, inst *instance, sel, path string, failed func() error) error {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	_, err := inst.conn.ExecContext(ctx, `COPY (`+sel+`) TO `+quote(tmp)+` (FORMAT parquet, COMPRESSION zstd)`)
	if failed != nil {
		if ferr := failed(); ferr != nil {
			err = ferr
		}
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// removeIdle removes the copies and leftovers no read used for
// dayCopyIdle: of partitions archived since, of sums drawn a new token.
func (c *dayCopies) removeIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !strings.Contains(e.Name(), ".parquet") || time.Since(info.ModTime()) < dayCopyIdle {
			continue
		}
		os.Remove(filepath.Join(c.dir, e.Name()))
	}
}

// wait waits for the fills under way (tests, Close).
func (c *dayCopies) wait() { c.wg.Wait() }
