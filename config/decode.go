package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/meterstore/meterstore/consensus/postgres"
)

// schemaName is a PostgreSQL schema name the hot tier accepts.
var schemaName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// namespaceName is an Iceberg namespace the catalog accepts.
var namespaceName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// config reads every key of raw, with its default where the file leaves
// it out.
func (r *reader) config(raw *rawConfig) *Config {
	c := &Config{}

	p := &raw.Postgres
	if c.Postgres.URL = r.str("postgres.url", p.URL, ""); c.Postgres.URL != "" {
		r.connString("postgres.url", c.Postgres.URL)
	}
	c.Postgres.Schema = r.str("postgres.schema", p.Schema, defaultSchema)
	switch s := c.Postgres.Schema; {
	case !schemaName.MatchString(s):
		r.errorf("postgres.schema", "%q: want a lowercase letter, then lowercase letters, digits and underscores, at most 63 bytes", s)
	case strings.HasPrefix(s, "pg_") || s == "information_schema":
		// PostgreSQL's own: the hot tables and the log would sit beside
		// its catalogs, and CREATE SCHEMA refuses the pg_ prefix.
		r.errorf("postgres.schema", "%q is a PostgreSQL system schema (pg_* and information_schema are): name a schema of the deployment's own", s)
	}
	c.Postgres.DataDir = r.path("postgres.data_dir", p.DataDir, defaultDataDir)
	r.ownDir("postgres.data_dir", c.Postgres.DataDir)

	w := &raw.Warehouse
	c.Warehouse.URL = r.warehouseURL("warehouse.url", r.str("warehouse.url", w.URL, defaultWarehouse))
	c.Warehouse.Namespace = r.str("warehouse.namespace", w.Namespace, defaultNamespace)
	if !namespaceName.MatchString(c.Warehouse.Namespace) {
		r.errorf("warehouse.namespace", "%q: want a letter or underscore, then letters, digits and underscores", c.Warehouse.Namespace)
	}

	cat := &raw.Catalog
	c.Catalog.URI = r.str("catalog.uri", cat.URI, "")
	switch c.Catalog.Type = r.str("catalog.type", cat.Type, defaultCatalogType); c.Catalog.Type {
	case "log":
		if c.Catalog.URI != "" {
			r.errorf("catalog.uri", "only a rest or sql catalog reads it; catalog.type is log, whose log lives in catalog.log")
		}
	case "sql":
		if c.Catalog.URI != "" {
			r.connString("catalog.uri", c.Catalog.URI)
		}
	case "rest":
		if u, err := url.Parse(c.Catalog.URI); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			r.errorf("catalog.uri", "%q: a rest catalog needs an http or https URL", c.Catalog.URI)
		}
	default:
		r.errorf("catalog.type", "%q: want \"log\", \"rest\" or \"sql\"", c.Catalog.Type)
	}
	switch c.Catalog.Log = r.str("catalog.log", cat.Log, defaultLog); c.Catalog.Log {
	case "postgres", "object_store":
	default:
		r.errorf("catalog.log", "%q: want \"postgres\" or \"object_store\"", c.Catalog.Log)
	}
	iso := r.str("catalog.isolation", cat.Isolation, string(postgres.ReadCommitted))
	var err error
	if c.Catalog.Isolation, err = postgres.ParseIsolation(iso); err != nil || iso == "" {
		r.errorf("catalog.isolation", "%q: want \"read_committed\" or \"serializable\"", iso)
	}

	c.Hot.DDLLockTimeout = r.atMost("hot.ddl_lock_timeout", r.duration("hot.ddl_lock_timeout", raw.Hot.DDLLockTimeout, defaultDDLLockTimeout, "s"),
		maxDDLLockTimeout, defaultDDLLockTimeout, "; 0s waits forever")
	c.Hot.AcceptAhead = r.duration("hot.accept_ahead", raw.Hot.AcceptAhead, defaultAcceptAhead, "d")
	if k := c.Hot.AcceptAhead; (k <= 0 || k > maxAcceptAhead) && r.ok("hot.accept_ahead") {
		r.errorf("hot.accept_ahead", "%v: want a positive duration, at most %v", Duration(k), Duration(maxAcceptAhead))
	}

	a := &raw.Archive
	c.Archive = Archive{
		SettlementLag:      r.duration("archive.settlement_lag", a.SettlementLag, defaultSettlementLag, "d"),
		Step:               r.duration("archive.archival_step", a.Step, defaultStep, "d"),
		MaxWindowsPerCycle: r.integer("archive.max_windows_per_cycle", a.MaxWindowsPerCycle, defaultMaxWindows, 1, maxWindows),
		ReaderGrace: r.atMost("archive.reader_grace", r.duration("archive.reader_grace", a.ReaderGrace, defaultReaderGrace, "h"),
			maxReaderGrace, defaultReaderGrace, ", so long do archived partitions stay in PostgreSQL"),
		ChunkRows: r.integer("archive.chunk_rows", a.ChunkRows, defaultChunkRows, 1, maxChunkRows),
	}
	if k := c.Archive.SettlementLag; k > maxSettlementLag && r.ok("archive.settlement_lag") {
		// The hot tier keeps a partition for every day of the lag.
		r.errorf("archive.settlement_lag", "%v: want at most %v, three years of partitions in PostgreSQL before a window is archived",
			Duration(k), Duration(maxSettlementLag))
	}

	k := &raw.Cold
	c.Cold = Cold{
		RowGroupRows:   r.integer("cold.row_group_rows", k.RowGroupRows, defaultRowGroupRows, 1, maxRowGroupRows),
		RowGroupBytes:  r.boundedSize("cold.row_group_bytes", k.RowGroupBytes, defaultRowGroupBytes, minRowGroupBytes, maxRowGroupBytes),
		TargetFileSize: r.boundedSize("cold.target_file_size", k.TargetFileSize, defaultTargetFileSize, minFileSize, maxFileSize),
		ZstdLevel:      r.integer("cold.zstd_level", k.ZstdLevel, defaultZstdLevel, 1, 22),
		BloomBytes:     int(r.boundedSize("cold.bloom_bytes", k.BloomBytes, defaultBloomBytes, 32, maxBloomBytes)),
		BatchRows:      r.integer("cold.batch_rows", k.BatchRows, defaultBatchRows, 1, maxBatchRows),
	}

	m := &raw.Maintenance
	c.Maintenance = Maintenance{
		Interval:        r.duration("maintenance.interval", m.Interval, defaultInterval, "m"),
		ExpireSnapshots: r.boolean("maintenance.expire_snapshots", m.ExpireSnapshots, false),
		SnapshotRetention: r.atMost("maintenance.snapshot_retention", r.duration("maintenance.snapshot_retention", m.SnapshotRetention, defaultSnapshotRetention, "d"),
			maxRetention, defaultSnapshotRetention, ""),
		MinSnapshots:      r.integer("maintenance.min_snapshots", m.MinSnapshots, defaultMinSnapshots, 1, maxMinSnapshots),
		Compact:           r.boolean("maintenance.compact", m.Compact, true),
		CompactManifests:  r.integer("maintenance.compact_manifests", m.CompactManifests, defaultCompactManifests, 1, maxCompactAt),
		CompactSmallFiles: r.integer("maintenance.compact_small_files", m.CompactSmallFiles, defaultCompactSmallFiles, 1, maxCompactAt),
		MaxClockSkew:      r.duration("maintenance.max_clock_skew", m.MaxClockSkew, defaultMaxClockSkew, "h"),
		RemoveOrphansAfter: r.atMost("maintenance.remove_orphans_after", r.duration("maintenance.remove_orphans_after", m.RemoveOrphans, defaultOrphanAge, "d"),
			maxOrphanAge, defaultOrphanAge, "; 0s turns it off"),
	}
	if k := c.Maintenance.RemoveOrphansAfter; k != 0 && k < minOrphanAge && r.ok("maintenance.remove_orphans_after") {
		r.errorf("maintenance.remove_orphans_after", "%v: want 0s (off) or at least %v: a younger file may belong to a commit under way", Duration(k), Duration(minOrphanAge))
	}
	if k := c.Maintenance.MaxClockSkew; (k <= 0 || k > maxClockSkew) && r.ok("maintenance.max_clock_skew") {
		r.errorf("maintenance.max_clock_skew", "%v: want a positive duration, at most %v", Duration(k), Duration(maxClockSkew))
	}
	if c.Maintenance.Interval <= 0 && r.ok("maintenance.interval") {
		r.errorf("maintenance.interval", "want a positive duration")
	}
	if c.Maintenance.SnapshotRetention <= 0 && r.ok("maintenance.snapshot_retention") {
		r.errorf("maintenance.snapshot_retention", "want a positive duration: a snapshot is what makes a past settlement reproducible")
	}

	c.Retention = r.retention(raw)

	q := &raw.Query
	c.Query.MemoryLimit = r.memoryLimit("query.memory_limit", q.MemoryLimit)
	c.Query.Threads = r.integer("query.threads", q.Threads, defaultThreads, 0, maxThreads)
	c.Query.MaxRows = r.integer("query.max_rows", q.MaxRows, defaultMaxRows, 1, maxMaxRows)
	c.Query.MaxResultBytes = r.boundedSize("query.max_result_bytes", q.MaxResult, defaultMaxResultBytes, minResultBytes, maxMemoryLimit)
	c.Query.Timeout = r.atMost("query.timeout", r.duration("query.timeout", q.Timeout, defaultQueryTimeout, "s"),
		maxQueryTimeout, defaultQueryTimeout, "; 0s lets a query run as long as it takes")
	c.Query.VerifyDigests = r.boolean("query.verify_digests", q.Digests, false)
	c.Query.DeliveryLag = r.atMost("query.delivery_lag", r.duration("query.delivery_lag", q.DeliveryLag, 0, "s"), maxDeliveryLag, 0, "")
	c.Query.SystemTablesMaxAge = r.atMost("query.system_tables_max_age",
		r.duration("query.system_tables_max_age", q.SystemAge, defaultSystemAge, "s"), maxSystemAge, defaultSystemAge, "")
	if c.Query.SystemTablesMaxAge <= 0 && r.ok("query.system_tables_max_age") {
		r.errorf("query.system_tables_max_age", "want a positive duration: every statement naming a system table would compute the status of both tiers")
	}
	c.Query.FooterCacheBytes = r.boundedSize("query.footer_cache_bytes", q.FooterCache, defaultFooterCacheBytes, 0, maxMemoryLimit)
	c.Query.CacheBytes = r.boundedSize("query.cache_bytes", q.CacheBytes, defaultCacheBytes, minCacheBytes, maxCacheBytes)
	if dir := r.str("query.cache_dir", q.CacheDir, ""); dir != "" {
		c.Query.CacheDir = r.abs(dir)
		r.ownDir("query.cache_dir", c.Query.CacheDir)
	} else {
		c.Query.CacheDir = filepath.Join(c.Postgres.DataDir, defaultCacheDir)
	}

	c.Server = r.server(&raw.Server)

	for i := range raw.Table {
		c.tables = append(c.tables, r.table(fmt.Sprintf("table[%d]", i), &raw.Table[i]))
	}
	return c
}

// boundedSize returns the size at key, which must lie in [lo, hi].
func (r *reader) boundedSize(key string, v value, def, lo, hi int64) int64 {
	n := r.size(key, v, def)
	switch {
	case !r.ok(key):
	case n < lo:
		r.errorf(key, "%v: want at least %v", Size(n), Size(lo))
		return def
	case n > hi:
		r.errorf(key, "%v: want at most %v", Size(n), Size(hi))
		return def
	}
	return n
}

// connString checks the PostgreSQL connection string at key, a URL or
// key=value pairs, as pgx parses it when the deployment is opened. pgx's
// error leaves the password out.
func (r *reader) connString(key, s string) {
	if _, err := pgconn.ParseConfig(s); err != nil {
		r.errorf(key, "%v", err)
	}
}

// retention reads the [retention] section.
func (r *reader) retention(raw *rawConfig) RetentionPolicy {
	s := &raw.Retention
	p := RetentionPolicy{
		LegalBasis: strings.TrimSpace(r.str("retention.legal_basis", s.LegalBasis, defaultLegalBasis)),
		Actor:      strings.TrimSpace(r.str("retention.actor", s.Actor, defaultActor)),
		SubjectKey: Secret(r.str("retention.subject_key", s.SubjectKey, "")),
	}
	if n := len(p.SubjectKey); n > 0 && n < minSubjectKeyLen {
		r.errorf("retention.subject_key", "%d bytes; want at least %d, random, from outside the file (${VAR})", n, minSubjectKeyLen)
	}
	policy := strings.TrimSpace(r.str("retention.policy", s.Policy, ""))
	if policy == "" {
		return p
	}
	kind, arg, _ := strings.Cut(policy, ":")
	switch kind {
	case "calendar_years":
		n, err := strconv.Atoi(strings.TrimSpace(arg))
		if err != nil || n < 1 {
			r.errorf("retention.policy", "%q: want calendar_years:N with N at least 1, as in calendar_years:3", policy)
			return p
		}
		p.Kind, p.Years = kind, n
	case "rolling":
		d, err := parseDuration(strings.TrimSpace(arg))
		if err != nil || d <= 0 {
			r.errorf("retention.policy", "%q: want rolling: and a positive duration, as in rolling:1095d", policy)
			return p
		}
		p.Kind, p.Rolling = kind, d
	default:
		r.errorf("retention.policy", "%q: want \"\", calendar_years:N or rolling:<duration>", policy)
		return p
	}
	if p.LegalBasis == "" {
		r.errorf("retention.legal_basis", "a retention policy needs the legal basis it is recorded under")
	}
	if p.Actor == "" {
		r.errorf("retention.actor", "a retention policy needs the actor it is recorded as")
	}
	return p
}

// memoryLimit returns DuckDB's memory_limit from the size at key: "" for
// DuckDB's default, else the size in the largest unit that divides it.
func (r *reader) memoryLimit(key string, v value) string {
	if !v.set {
		return defaultMemoryLimit
	}
	if _, ok := v.v.(string); ok {
		if t, ok := r.text(key, v); !ok || strings.TrimSpace(t) == "" {
			return ""
		}
	}
	n := r.size(key, v, 0)
	switch {
	case !r.ok(key):
		return ""
	case n < minMemoryLimit:
		r.errorf(key, "%v: want at least %v, or \"\" for DuckDB's default: below it every query fails", Size(n), Size(minMemoryLimit))
		return ""
	case n > maxMemoryLimit:
		r.errorf(key, "%v: want at most %v", Size(n), Size(maxMemoryLimit))
		return ""
	}
	return Size(n).String()
}
