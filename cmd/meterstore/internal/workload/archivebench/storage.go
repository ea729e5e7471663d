package archivebench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/meterstore/meterstore/internal/archive"
	"github.com/meterstore/meterstore/internal/cold"
)

// StorageConfig configures a storage run.
type StorageConfig struct {
	Fixture Fixture
	// Schema is the PostgreSQL schema of the run; it is dropped and
	// recreated. Empty means "meterstore_archivebench".
	Schema string
	// Dir holds the Iceberg warehouse; empty means a temporary directory
	// removed at the end.
	Dir string
	// Progress receives the load progress; nil discards it.
	Progress io.Writer
	Logger   *slog.Logger
}

// StorageResult is what a storage run measured.
type StorageResult struct {
	Server    string  `json:"server"`
	Fixture   Fixture `json:"fixture"`
	Integrity string  `json:"integrity"`
	Readings  int64   `json:"readings_loaded"`
	LoadSecs  float64 `json:"load_seconds"`
	LoadPS    float64 `json:"load_readings_per_sec"`

	// PostgreSQL, before archiving: the rows of the partition tree and
	// pg_total_relation_size summed over it, split into heap with TOAST
	// and indexes.
	PGRows         int64   `json:"pg_rows"`
	PGBytes        int64   `json:"pg_bytes"`
	PGHeapBytes    int64   `json:"pg_heap_bytes"`
	PGIndexBytes   int64   `json:"pg_index_bytes"`
	PGBytesPerRead float64 `json:"pg_bytes_per_reading"`

	// Archival of everything, in one cycle of daily windows.
	Windows     int     `json:"windows"`
	ArchiveSecs float64 `json:"archive_seconds"`
	ArchivePS   float64 `json:"archive_readings_per_sec"`

	// The cold tier's data files after the archival.
	ColdFiles        int     `json:"cold_files"`
	ColdBytes        int64   `json:"cold_bytes"`
	ColdReadings     int64   `json:"cold_readings"`
	ColdBytesPerRead float64 `json:"cold_bytes_per_reading"`
	// From the data files' Parquet footers: each column's compressed
	// bytes a reading, the bloom filters' bytes, and the value column's
	// empirical Shannon entropy in bytes a reading (over ValueDistinct
	// values). VsEntropy is ColdBytesPerRead over it.
	ColdColumns       []ColumnResult `json:"cold_columns"`
	ColdBloomBytes    int64          `json:"cold_bloom_bytes"`
	ColdOverheadBytes int64          `json:"cold_overhead_bytes"`
	ValueDistinct     int            `json:"value_distinct"`
	ValueEntropy      float64        `json:"value_entropy_bytes_per_reading"`
	VsEntropy         float64        `json:"cold_vs_entropy"`

	// The same after the maintenance loop's compaction of the settled
	// months (see cold.CompactOptions.Settled): what the months cost for
	// the years they stay.
	Compacted *CompactedResult `json:"compacted,omitempty"`

	// Ratio is PostgreSQL bytes per reading over cold bytes per reading.
	Ratio float64 `json:"ratio"`
}

// CompactedResult is the cold tier after the compaction of settled months.
type CompactedResult struct {
	Seconds         float64        `json:"seconds"`
	Rewritten       int            `json:"files_rewritten"`
	Files           int            `json:"cold_files"`
	Bytes           int64          `json:"cold_bytes"`
	BytesPerReading float64        `json:"cold_bytes_per_reading"`
	Columns         []ColumnResult `json:"cold_columns"`
	BloomBytes      int64          `json:"cold_bloom_bytes"`
	OverheadBytes   int64          `json:"cold_overhead_bytes"`
	VsEntropy       float64        `json:"cold_vs_entropy"`
}

// ColumnResult is one cold column's compressed bytes over every file.
type ColumnResult struct {
	Name            string  `json:"name"`
	Bytes           int64   `json:"bytes"`
	BytesPerReading float64 `json:"bytes_per_reading"`
}

// FootprintColumns returns fp's columns as results.
func FootprintColumns(fp cold.Footprint) []ColumnResult {
	out := make([]ColumnResult, 0, len(fp.Columns))
	for _, c := range fp.Columns {
		out = append(out, ColumnResult{Name: c.Name, Bytes: c.Bytes, BytesPerReading: fp.ColumnBytesPerReading(c)})
	}
	return out
}

// RunStorage loads the fixture into a power table on the server at url,
// measures its PostgreSQL size, archives all of it and measures the cold
// tier's data files.
func RunStorage(ctx context.Context, url string, c StorageConfig) (*StorageResult, error) {
	if err := c.Fixture.validate(); err != nil {
		return nil, err
	}
	if c.Schema == "" {
		c.Schema = "meterstore_archivebench"
	}
	e, err := openEnv(ctx, url, c.Schema, c.Dir, true, c.Logger)
	if err != nil {
		return nil, err
	}
	defer e.close()
	res := &StorageResult{Server: e.serverVersion(ctx), Fixture: c.Fixture, Integrity: e.table.Integrity.String()}

	start := time.Now()
	if res.Readings, err = e.load(ctx, c.Fixture, c.Progress); err != nil {
		return nil, err
	}
	res.LoadSecs = time.Since(start).Seconds()
	res.LoadPS = float64(res.Readings) / res.LoadSecs

	if res.PGRows, res.PGBytes, res.PGHeapBytes, res.PGIndexBytes, err = e.pgStorage(ctx); err != nil {
		return nil, err
	}
	if res.PGRows > 0 {
		res.PGBytesPerRead = float64(res.PGBytes) / float64(res.PGRows)
	}

	// Daily windows, due one day after they end: at a now one day past the
	// last partition every window is due, and the cycle may take them all.
	from, to := e.span(c.Fixture)
	days := int(to.Sub(from) / (24 * time.Hour))
	a, err := e.archiver(archive.Config{
		SettlementLag:      24 * time.Hour,
		Step:               24 * time.Hour,
		MaxWindowsPerCycle: days + 1,
	})
	if err != nil {
		return nil, err
	}
	start = time.Now()
	out, err := a.Cycle(ctx, e.table, e.ctable, to.Add(24*time.Hour))
	if err != nil {
		return nil, fmt.Errorf("archivebench: archive: %w", err)
	}
	if !out.Healthy() {
		return nil, fmt.Errorf("archivebench: archive: cycle %s: %v", out.Status, out.Violations)
	}
	res.ArchiveSecs = time.Since(start).Seconds()
	res.Windows = len(out.Windows)
	if !out.Watermark.Equal(to) {
		return nil, fmt.Errorf("archivebench: archive: watermark %s after the cycle, want %s", out.Watermark, to)
	}

	st, err := e.cold.Storage(ctx, e.ctable)
	if err != nil {
		return nil, fmt.Errorf("archivebench: %w", err)
	}
	res.ColdFiles, res.ColdBytes, res.ColdReadings = st.Files, st.Bytes, st.Readings
	res.ColdBytesPerRead = st.BytesPerReading()
	res.ArchivePS = float64(st.Readings) / res.ArchiveSecs
	if st.Readings != res.PGRows {
		return nil, fmt.Errorf("archivebench: the cold tier holds %d readings, PostgreSQL held %d", st.Readings, res.PGRows)
	}
	fp, err := e.cold.Footprint(ctx, e.ctable)
	if err != nil {
		return nil, fmt.Errorf("archivebench: %w", err)
	}
	res.ColdColumns = FootprintColumns(fp)
	res.ColdBloomBytes, res.ColdOverheadBytes = fp.BloomBytes, fp.OverheadBytes()
	res.ValueDistinct, res.ValueEntropy, res.VsEntropy = fp.ValueDistinct, fp.ValueEntropyBytes(), fp.VsEntropy()
	start = time.Now()
	cp, err := e.cold.Compact(ctx, e.ctable, cold.CompactOptions{ManifestsOver: 16, SmallFilesOver: 8, Settled: true})
	if err != nil {
		return nil, fmt.Errorf("archivebench: compact: %w", err)
	}
	secs := time.Since(start).Seconds()
	if fp, err = e.cold.Footprint(ctx, e.ctable); err != nil {
		return nil, fmt.Errorf("archivebench: %w", err)
	}
	if fp.Readings != res.PGRows {
		return nil, fmt.Errorf("archivebench: after compaction the cold tier holds %d readings, PostgreSQL held %d", fp.Readings, res.PGRows)
	}
	res.Compacted = &CompactedResult{Seconds: secs, Rewritten: cp.Rewritten, Files: fp.Files, Bytes: fp.Bytes,
		BytesPerReading: fp.BytesPerReading(), Columns: FootprintColumns(fp), BloomBytes: fp.BloomBytes,
		OverheadBytes: fp.OverheadBytes(), VsEntropy: fp.VsEntropy()}
	if res.ColdBytesPerRead > 0 {
		res.Ratio = res.PGBytesPerRead / res.ColdBytesPerRead
	}
	return res, nil
}
