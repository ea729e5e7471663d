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

// A dayCopy is one copy a statement wants: the unit's token, the table
// and columns it is of, and where it is kept.
type dayCopy struct {
	table string
	cols  []HotColumn
	tok   DayToken
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

// write reads the sums of m.tok in a snapshot of their own and writes
// them to m.path, only if that snapshot shows the partition's sums whole
// under the same token: then they are the sums the token names.
func (c *dayCopies) write(ctx context.Context, src Source, m dayCopy) (err error) {
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
	cols, ok, err := scan.registerDays(inst.conn, "meterstore_day_copy", m.tok.From)
	switch {
	case err != nil:
		return err
	case !ok || !slices.Equal(cols, m.cols):
		return errMovedOn
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	tmp := m.path + ".tmp-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	_, err = inst.conn.ExecContext(ctx, `COPY (SELECT * FROM meterstore_day_copy()) TO `+quote(tmp)+` (FORMAT parquet, COMPRESSION zstd)`)
	if ferr := scan.failed(); ferr != nil {
		err = ferr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, m.path); err != nil {
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
