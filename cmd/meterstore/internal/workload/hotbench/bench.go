package hotbench

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/internal/hot/pgnum"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// The variants a run measures.
const (
	RawCopy   = "raw COPY"               // COPY into a plain table with the same columns
	RawCopyPK = "raw COPY + primary key" // the same, with the hot table's primary key, for reference
	// RawCopyChecks adds the hot table's CHECK constraints to RawCopyPK:
	// the constraints the hot tier must have, without anything Write does,
	// and so the most Write can reach without exclusion constraints.
	RawCopyChecks = "raw COPY + primary key + CHECKs"
	Exclusion     = "hot, exclusion"    // hot.Tier.Write, integrity exclusion: GiST per row
	NoExclusion   = "hot, no exclusion" // hot.Tier.Write, integrity write: checks in the write path only
	// Statement is hot.Tier.Write into a table of integrity statement,
	// where PostgreSQL enforces every rule for every client.
	Statement = "hot Write, database-enforced"
	// StatementEach writes the batches of a turn into a table of integrity
	// statement with hot.Tier.WriteEach: the next batch checked and
	// converted while the one before it is written.
	StatementEach = "hot WriteEach, database-enforced"
)

// Config configures a run.
type Config struct {
	Fixture Fixture
	// Variants to measure, in addition to RawCopy, which every ratio is
	// taken against; nil means the hot write variants, FormatVariants
	// the ingest of delivery formats.
	Variants []string
	// Turn is the number of consecutive batches each variant writes in
	// its turn; zero means one. StatementEach overlaps its work only
	// within a turn.
	Turn   int
	Logger *slog.Logger
}

// DefaultConfig measures every variant on DefaultFixture.
func DefaultConfig() Config { return Config{Fixture: DefaultFixture()} }

// Result is the outcome of a run.
type Result struct {
	Server     string    `json:"server"`
	GOMAXPROCS int       `json:"gomaxprocs"`
	Fixture    Fixture   `json:"fixture"`
	Rows       int       `json:"rows"`
	Batches    int       `json:"batches"`
	Turn       int       `json:"batches_a_turn"`
	Variants   []Variant `json:"variants"`
	// MSCONSToCSV is the readings/s of MSCONSIngest over those of
	// CSVIngest, when both ran.
	MSCONSToCSV float64 `json:"mscons_to_csv,omitempty"`
	// EnforcedToCopyPK is the readings/s of Statement over those of
	// RawCopyPK, when both ran.
	EnforcedToCopyPK float64 `json:"database_enforced_to_copy_pk,omitempty"`
	// EachToCopyPK is the readings/s of StatementEach over those of
	// RawCopyPK, when both ran.
	EachToCopyPK float64 `json:"write_each_to_copy_pk,omitempty"`
	// ServerTime is the server's time per statement, from
	// pg_stat_statements when the server has it loaded.
	ServerTime []ServerStatement `json:"server_time,omitempty"`
}

// A ServerStatement is the server's time spent in one statement over a
// run, nested statements of triggers included.
type ServerStatement struct {
	Query string  `json:"query"`
	Calls int64   `json:"calls"`
	Rows  int64   `json:"rows"`
	Ms    float64 `json:"total_ms"`
	// MicrosPerReading spreads the time over the readings of the
	// fixture: what the statement costs each reading of its variant.
	MicrosPerReading float64 `json:"us_per_reading"`
}

// Variant is one variant's measurement.
type Variant struct {
	Name           string  `json:"name"`
	Seconds        float64 `json:"seconds"` // time spent in its writes
	ReadingsPerSec float64 `json:"readings_per_sec"`
	// Ratio is ReadingsPerSec over that of RawCopy.
	Ratio float64 `json:"ratio_to_raw_copy"`
	Rows  int64   `json:"rows_stored"` // counted after the run
	// BytesPerReading is the variant's relations (heap, TOAST, indexes,
	// and a hot table's ownership relation) over the rows stored.
	BytesPerReading float64 `json:"bytes_per_reading"`
}

// Run writes the fixture with every variant into fresh tables of a schema
// it creates and drops again. The variants take turns batch by batch, in
// rotating order, so that whatever else loads the machine, checkpoints
// included, falls on all of them alike.
func Run(ctx context.Context, pool *pgxpool.Pool, cfg Config) (*Result, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	variants := []string{RawCopy}
	want := cfg.Variants
	if want == nil {
		want = []string{RawCopyPK, RawCopyChecks, Statement, NoExclusion, Exclusion}
	}
	for _, v := range want {
		switch v {
		case RawCopy:
		case RawCopyPK, RawCopyChecks, Exclusion, NoExclusion, Statement, StatementEach, CSVIngest, MSCONSIngest:
			variants = append(variants, v)
		default:
			return nil, fmt.Errorf("hotbench: unknown variant %q", v)
		}
	}
	cal, err := metering.NewCalendar()
	if err != nil {
		return nil, err
	}
	gen, err := cfg.Fixture.Start(cal)
	if err != nil {
		return nil, err
	}
	res := &Result{GOMAXPROCS: runtime.GOMAXPROCS(0), Fixture: cfg.Fixture, Rows: gen.Rows()}
	if err := pool.QueryRow(ctx, `SHOW server_version`).Scan(&res.Server); err != nil {
		return nil, err
	}

	schema := fmt.Sprintf("meterstore_bench_%d", time.Now().UnixNano())
	defer func() {
		_, err := pool.Exec(context.WithoutCancel(ctx), `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`)
		if err != nil {
			log.Warn("hotbench: dropping the bench schema", "schema", schema, "err", err)
		}
	}()
	s, err := NewSetup(ctx, pool, schema, variants, gen)
	if err != nil {
		return nil, err
	}
	if _, err := pool.Exec(ctx, `CHECKPOINT`); err != nil {
		log.Info("hotbench: no checkpoint before the run (needs superuser or pg_checkpoint)", "err", err)
	}
	stats := resetStatements(ctx, pool, log)
	spent := make([]time.Duration, len(variants))
	start := time.Now()
	turn := max(cfg.Turn, 1)
	res.Turn = turn
	for b, t := 0, 0; ; t++ {
		var batches [][]series.Reading
		for range turn {
			if batch := gen.Next(); batch != nil {
				batches = append(batches, batch)
			}
		}
		if batches == nil {
			break
		}
		res.Batches += len(batches)
		for k := range variants {
			i := (t + k) % len(variants)
			d, err := s.turn(ctx, variants[i], batches, b)
			if err != nil {
				return nil, fmt.Errorf("hotbench: %s, batches from %d: %w", variants[i], b, err)
			}
			spent[i] += d
		}
		if b/20 != (b+len(batches))/20 {
			log.Info("hotbench: progress", "batches", b+len(batches), "elapsed", time.Since(start).Round(time.Second))
		}
		b += len(batches)
	}
	for i, v := range variants {
		n, bytes, err := s.Size(ctx, v)
		if err != nil {
			return nil, err
		}
		res.Variants = append(res.Variants, Variant{
			Name:            v,
			Seconds:         spent[i].Seconds(),
			ReadingsPerSec:  float64(res.Rows) / spent[i].Seconds(),
			Rows:            n,
			BytesPerReading: float64(bytes) / float64(max(n, 1)),
		})
	}
	if stats {
		if res.ServerTime, err = serverTime(ctx, pool, res.Rows); err != nil {
			return nil, err
		}
	}
	speed := map[string]float64{}
	for i := range res.Variants {
		res.Variants[i].Ratio = res.Variants[i].ReadingsPerSec / res.Variants[0].ReadingsPerSec
		speed[res.Variants[i].Name] = res.Variants[i].ReadingsPerSec
	}
	if speed[Statement] > 0 && speed[RawCopyPK] > 0 {
		res.EnforcedToCopyPK = speed[Statement] / speed[RawCopyPK]
	}
	if speed[StatementEach] > 0 && speed[RawCopyPK] > 0 {
		res.EachToCopyPK = speed[StatementEach] / speed[RawCopyPK]
	}
	if speed[CSVIngest] > 0 && speed[MSCONSIngest] > 0 {
		// A format that is fast but stores something else is no result.
		if err := s.Same(ctx, CSVIngest, MSCONSIngest); err != nil {
			return nil, err
		}
		res.MSCONSToCSV = speed[MSCONSIngest] / speed[CSVIngest]
	}
	return res, nil
}

// A Setup holds the tables of the variants.
type Setup struct {
	pool   *pgxpool.Pool
	tier   *hot.Tier
	cal    *metering.Calendar
	tables map[string]*series.Table
	raw    map[string]pgx.Identifier // a raw variant's table
}

// NewSetup creates, in schema, a hot table per hot variant with partitions for
// the fixture's span, and a plain table per raw variant with the same
// columns: created LIKE the hot table, which copies names, types and NOT
// NULL, and, for RawCopyChecks, the CHECK constraints.
func NewSetup(ctx context.Context, pool *pgxpool.Pool, schema string, variants []string, gen *Generator) (*Setup, error) {
	tier, err := hot.New(pool, hot.Options{Schema: schema})
	if err != nil {
		return nil, err
	}
	cal, err := metering.NewCalendar()
	if err != nil {
		return nil, err
	}
	s := &Setup{pool: pool, tier: tier, cal: cal, tables: map[string]*series.Table{}, raw: map[string]pgx.Identifier{}}
	from, to := gen.Span()
	decl := func(name string, integrity series.Integrity, partitions bool) (*series.Table, error) {
		t := &series.Table{
			Name:        name,
			TimeModel:   series.Interval,
			Commodity:   metering.Electricity,
			Resolutions: []metering.Resolution{metering.QuarterHour},
			Width:       series.Daily,
			Integrity:   integrity,
		}
		if err := tier.Ensure(ctx, t); err != nil || !partitions {
			return t, err
		}
		_, err := tier.CreatePartitions(ctx, t, from, to.Add(-time.Microsecond))
		return t, err
	}
	for _, v := range variants {
		switch v {
		case Exclusion, NoExclusion, Statement, StatementEach, CSVIngest, MSCONSIngest:
			name := map[string]string{Exclusion: "lastgang_excl", NoExclusion: "lastgang_noexcl", Statement: "lastgang_stmt", StatementEach: "lastgang_each"}[v]
			if name == "" {
				name = ingestTables[v]
			}
			integrity := map[string]series.Integrity{Exclusion: series.IntegrityExclusion, NoExclusion: series.IntegrityWrite,
				Statement: series.IntegrityStatement, StatementEach: series.IntegrityStatement}[v]
			t, err := decl(name, integrity, true)
			if err != nil {
				return nil, err
			}
			s.tables[v] = t
		}
	}
	// The raw tables copy the columns of a hot table declared for the
	// purpose, the same whichever hot variants run, with every CHECK
	// per row.
	model, err := decl("lastgang_model", series.IntegrityWrite, false)
	if err != nil {
		return nil, err
	}
	for _, v := range variants {
		q := map[string]string{RawCopy: "raw", RawCopyPK: "raw_pk", RawCopyChecks: "raw_checks"}[v]
		if q == "" {
			continue
		}
		id := pgx.Identifier{schema, q}
		like := `CREATE TABLE ` + id.Sanitize() + ` (LIKE ` + pgx.Identifier{schema, model.Name}.Sanitize()
		ddl := like + `)`
		switch v {
		case RawCopyPK:
			ddl = like + `, PRIMARY KEY (malo_id, obis_code, "from", version))`
		case RawCopyChecks:
			ddl = like + ` INCLUDING CONSTRAINTS, PRIMARY KEY (malo_id, obis_code, "from", version))`
		}
		if _, err := pool.Exec(ctx, ddl); err != nil {
			return nil, err
		}
		s.raw[v] = id
	}
	return s, nil
}

// turn writes the batches of a turn with variant v, the first numbered b,
// and returns the time spent writing them (encoding a delivery not
// included).
func (s *Setup) turn(ctx context.Context, v string, batches [][]series.Reading, b int) (time.Duration, error) {
	if v == StatementEach {
		t0 := time.Now()
		i := 0
		err := s.tier.WriteEach(ctx, s.tables[v], func() ([]series.Reading, error) {
			if i == len(batches) {
				return nil, nil
			}
			i++
			return batches[i-1], nil
		}, func(_ series.Result, err error) error { return err })
		return time.Since(t0), err
	}
	var spent time.Duration
	for k, batch := range batches {
		in, err := s.encode(v, batch, b+k)
		if err != nil {
			return 0, err
		}
		t0 := time.Now()
		if err := s.write(ctx, v, batch, in); err != nil {
			return 0, err
		}
		spent += time.Since(t0)
	}
	return spent, nil
}

// Write writes a batch with variant v; an ingest variant encodes it first.
func (s *Setup) Write(ctx context.Context, v string, batch []series.Reading) error {
	in, err := s.encode(v, batch, 0)
	if err != nil {
		return err
	}
	return s.write(ctx, v, batch, in)
}

// write writes a batch with variant v, from its encoding in for an ingest
// variant.
func (s *Setup) write(ctx context.Context, v string, batch []series.Reading, in []byte) error {
	if in != nil {
		return s.ingest(ctx, v, in, len(batch))
	}
	if t := s.tables[v]; t != nil {
		_, err := s.tier.Write(ctx, t, batch)
		return err
	}
	return s.copyRaw(ctx, s.raw[v], batch)
}

// Count returns the rows variant v stored.
func (s *Setup) Count(ctx context.Context, v string) (int64, error) {
	n, _, err := s.Size(ctx, v)
	return n, err
}

// Size returns the rows variant v stored and the bytes they take.
func (s *Setup) Size(ctx context.Context, v string) (rows, bytes int64, err error) {
	if t := s.tables[v]; t != nil {
		return s.tier.Size(ctx, t)
	}
	name := s.raw[v].Sanitize()
	err = s.pool.QueryRow(ctx, `SELECT count(*), pg_total_relation_size($1::regclass) FROM `+name, name).Scan(&rows, &bytes)
	return rows, bytes, err
}

// rawColumns are the columns raw COPY sends: those the hot write sends,
// plus recorded_at, which the hot table defaults.
var rawColumns = []string{"malo_id", "melo_id", "obis_code", "sparte", "from", "to", "value", "unit",
	"quality", "resolution", "version", "version_scope", "recorded_at", "balancing_day", "subject_id"}

type rawRow struct {
	src                            *series.Reading
	sparte, unit, quality, resolut string
	value                          pgnum.Micro
	version                        pgnum.Uint
	day                            time.Time
}

// copyRaw is raw COPY at its best: no checks, and the same encoding as the
// hot write, so that only what the server does differs.
func (s *Setup) copyRaw(ctx context.Context, table pgx.Identifier, batch []series.Reading) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	pgnum.Register(conn.Conn().TypeMap())
	rows := make([]rawRow, len(batch))
	for i := range batch {
		r := &batch[i]
		d := s.cal.BalancingDay(r.From, r.Commodity)
		rows[i] = rawRow{src: r, sparte: r.Commodity.String(), unit: r.Unit.String(), quality: r.Quality.String(),
			resolut: r.Resolution.String(), value: pgnum.Micro(r.Value), version: pgnum.Uint(r.Version),
			day: time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC)}
	}
	now := time.Now()
	vals := make([]any, 0, len(rawColumns))
	var melo, subject *string
	i := -1
	_, err = conn.CopyFrom(ctx, table, rawColumns, pgx.CopyFromFunc(func() ([]any, error) {
		i++
		if i == len(rows) {
			return nil, nil
		}
		r := &rows[i]
		return append(vals[:0], &r.src.MaLo, melo, &r.src.OBIS, &r.sparte, &r.src.From, &r.src.To, &r.value,
			&r.unit, &r.quality, &r.resolut, &r.version, &r.src.VersionScope, &now, &r.day, subject), nil
	}))
	return err
}
