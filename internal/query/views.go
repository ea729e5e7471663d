package query

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/resolve"
	"github.com/meterstore/meterstore/series"
)

// The tiers' rows of a table reach a statement through two views,
// readings_versions and readings, in the schema of its name (see placeOf).
// The tiers'
// relations (the hot tier's table functions, hotscan.go, and the scans of
// the planned Parquet files) are written into those two views, not
// created as views of their own: DuckDB binds a view when it is created,
// and binds it again wherever a statement or another view names it, and
// a scan of many files costs a bind of each.

// A place names the schema of one table's readings and readings_versions.
type place struct{ out string }

// placeOf returns the place of table name: its relations in the schema
// of its name.
func placeOf(name string) place { return place{out: name} }

// rel returns the qualified name of relation name in schema.
func rel(schema, name string) string { return ident(schema) + "." + ident(name) }

// schemaSQL returns the statement that creates the schema of p's
// relations.
func schemaSQL(p place) string {
	return `CREATE SCHEMA IF NOT EXISTS ` + database + `.` + ident(p.out)
}

// A view says what readings_versions shows of the tiers besides their
// split: the part of a past snapshot, and recorded_at ceilings.
type view struct {
	asOf    *past     // the snapshot read as of, if any
	ceiling time.Time // on the current tiers' rows; zero: none
	knownAt time.Time // on the past snapshot's rows; zero: none
	broken  broken    // tests only
	// noVersions: the statement reads no readings_versions, which is not
	// created, nor the relations of superseded files only it reads.
	noVersions bool
}

// A broken resolution is a deliberately wrong one, with which the tests
// show that their oracle catches a superseded row treated as current.
type broken int

const (
	brokenNone        broken = iota
	brokenTrustMarks         // ignore late corrections of marked rows
	brokenIgnoreMarks        // take superseded rows of settled files too
)

// A past snapshot's files, which answer below its W.
type past struct {
	files fileSet
	s     split
}

// A fileSet is the cold files a view reads, by their cold.FileKind.
type fileSet struct {
	groups map[cold.FileKind]*fileGroup
}

// A fileGroup is the files of one kind and the columns they have, nil if
// a file's metrics do not say (see cold.Plan.Columns).
type fileGroup struct {
	files   []string
	cols    map[string]bool
	unknown bool // some file's columns are not known
	// uniform: every file has the same columns, so DuckDB may bind the
	// scan by the first file's schema instead of reading every footer.
	uniform bool
	first   []string // the first file's columns
}

// kindOrder is the order the kinds' relations are created in.
var kindOrder = []struct {
	kind   cold.FileKind
	suffix string
}{{cold.Current, "_current"}, {cold.Mixed, "_mixed"}, {cold.Superseded, "_superseded"}, {cold.Open, "_open"}}

func filesOf(p cold.Plan) fileSet {
	f := fileSet{groups: map[cold.FileKind]*fileGroup{}}
	for i, path := range p.Files {
		kind := cold.Open
		if i < len(p.Kinds) {
			kind = p.Kinds[i]
		}
		g := f.groups[kind]
		if g == nil {
			g = &fileGroup{cols: map[string]bool{}, uniform: true}
			f.groups[kind] = g
		}
		g.files = append(g.files, path)
		if i >= len(p.Columns) || p.Columns[i] == nil {
			g.unknown = true
			continue
		}
		if len(g.files) == 1 {
			g.first = p.Columns[i]
		} else if !slices.Equal(g.first, p.Columns[i]) {
			g.uniform = false
		}
		for _, c := range p.Columns[i] {
			g.cols[c] = true
		}
	}
	for _, g := range f.groups {
		if g.unknown {
			g.cols, g.uniform = nil, false
		}
	}
	return f
}

func (f fileSet) all() []string {
	var out []string
	for _, k := range kindOrder {
		if g := f.groups[k.kind]; g != nil {
			out = append(out, g.files...)
		}
	}
	return out
}

// A part is one relation of readings_versions, with the condition that
// selects its rows.
type part struct {
	rel   string
	where []string
	kind  cold.FileKind // of cold files
	hot   bool
	// marks: the superseded marks hold in this view, since no recorded_at
	// ceiling hides a later version: a marked row never wins, an unmarked
	// one wins unless an open part has its key.
	marks bool
}

// marked reports whether x's rows are taken as archival marked them.
func (x part) marked() bool { return !x.hot && x.kind != cold.Open && x.marks }

// createViews creates p's schema and returns the statements that create
// the two views readings_versions and readings in it, over the hot read
// and the files (see instance.defineReadings). In a read as of a past snapshot, its rows
// below its W come from its own files, and the current tiers show only
// rows at or above it.
//
// readings resolves versions only where they may compete: a settled file's
// rows are taken as marked at archival (files of superseded versions are
// not read at all), except those whose merge key a late correction (an open
// file's row) has, which are resolved with the open files and the hot
// tier's rows. Without open files, no cold row is compared with another.
//
// It returns too the SELECT of readings' resolved rows below the split,
// the cold ones, for the relations that read them apart from the hot
// tier's rows; "" if there are none. The views are created with the
// statement's lockdown (instance.define).
func createViews(ctx context.Context, inst *instance, l layout, p place, hot *hotScan, files fileSet, s split, v view) (string, []string, error) {
	coldWhere, hotWhere := []string{"false"}, []string{"true"}
	if s.hasW {
		w := timestamptz(s.w)
		coldWhere, hotWhere = []string{`"from" < ` + w}, []string{`"from" >= ` + w}
	}
	if !v.ceiling.IsZero() {
		c := `"recorded_at" <= ` + timestamptz(v.ceiling)
		coldWhere, hotWhere = append(coldWhere, c), append(hotWhere, c)
	}
	stmts := []string{schemaSQL(p)}
	var parts []part
	// Superseded files are read by readings_versions alone, or by readings
	// where their marks do not hold (a ceiling), or where a broken
	// resolution takes them.
	skipVersions := v.noVersions && v.broken != brokenIgnoreMarks
	addCold := func(fs fileSet, where []string, marks bool) error {
		for _, k := range kindOrder {
			g := fs.groups[k.kind]
			if g == nil || len(g.files) == 0 || (k.kind == cold.Superseded && marks && skipVersions) {
				continue
			}
			sel, err := coldSelect(ctx, inst, l, g.files, g.cols, g.uniform, k.kind == cold.Mixed)
			if err != nil {
				return err
			}
			parts = append(parts, part{rel: `(` + sel + `)`, where: where, kind: k.kind, marks: marks})
		}
		return nil
	}
	if v.asOf != nil {
		pastWhere := []string{"false"}
		if v.asOf.s.hasW {
			w := timestamptz(v.asOf.s.w)
			pastWhere = []string{`"from" < ` + w}
			coldWhere, hotWhere = append(coldWhere, `"from" >= `+w), append(hotWhere, `"from" >= `+w)
		}
		if !v.knownAt.IsZero() {
			pastWhere = append(pastWhere, `"recorded_at" <= `+timestamptz(v.knownAt))
		}
		if err := addCold(v.asOf.files, pastWhere, v.knownAt.IsZero()); err != nil {
			return "", nil, err
		}
	}
	if err := addCold(files, coldWhere, v.ceiling.IsZero()); err != nil {
		return "", nil, err
	}
	// The hot tier's rows are resolved on their own, the split and the
	// ceiling applied first: their merge keys lie at or above W, where no
	// cold row's does. Without a hot read, its relation is empty.
	cols := l.names()
	var hotRel, hotResolved string
	if hot == nil {
		defs := make([]string, len(l.cols))
		for i, c := range l.cols {
			defs[i] = `CAST(NULL AS ` + c.typ + `) AS ` + ident(c.name)
		}
		hotRel = `(SELECT ` + strings.Join(defs, ", ") + ` LIMIT 0)`
		hotResolved = `SELECT ` + cols + ` FROM ` + hotRel
	} else {
		every, err := hot.relation(l, nil, false, false)
		if err != nil {
			return "", nil, err
		}
		resolved, err := hot.relation(l, hotWhere, true, !v.ceiling.IsZero())
		if err != nil {
			return "", nil, err
		}
		hotRel, hotResolved = `(`+every+`)`, `SELECT `+cols+` FROM (`+resolved+`)`
	}
	parts = append(parts, part{rel: hotRel, where: hotWhere, hot: true})

	key := make([]string, len(l.key))
	for i, k := range l.key {
		key[i] = ident(k)
	}
	keys := strings.Join(key, ", ")
	var versions, open, fast, rest []string
	hotAt := -1 // of the hot rows in fast
	for _, x := range parts {
		sel := `SELECT ` + cols + ` FROM ` + x.rel + ` WHERE ` + strings.Join(x.where, " AND ")
		versions = append(versions, sel)
		if !x.hot && x.kind == cold.Open {
			open = append(open, `SELECT `+keys+` FROM `+x.rel+` WHERE `+strings.Join(x.where, " AND "))
		}
	}
	for _, x := range parts {
		sel := `SELECT ` + cols + ` FROM ` + x.rel + ` WHERE ` + strings.Join(x.where, " AND ")
		switch {
		case x.hot:
			hotAt, fast = len(fast), append(fast, hotResolved)
			continue
		case !x.marked():
			rest = append(rest, sel)
			continue
		case v.broken == brokenIgnoreMarks:
		case x.kind == cold.Superseded:
			continue
		case x.kind == cold.Mixed:
			sel += ` AND NOT "superseded"`
		}
		if len(open) == 0 || v.broken == brokenTrustMarks {
			fast = append(fast, sel)
			continue
		}
		openKeys := `(SELECT DISTINCT ` + keys + ` FROM (` + strings.Join(open, ` UNION ALL `) + `))`
		fast = append(fast, `SELECT `+cols+` FROM (`+sel+`) ANTI JOIN `+openKeys+` USING (`+keys+`)`)
		rest = append(rest, `SELECT `+cols+` FROM (`+sel+`) SEMI JOIN `+openKeys+` USING (`+keys+`)`)
	}
	resolved := fast
	if len(rest) > 0 {
		resolved = append(resolved, resolve.SQL(resolve.Engine, `(`+strings.Join(rest, ` UNION ALL `)+`)`, nil, l.key, false))
	}
	cold := slices.Clone(resolved)
	if hotAt >= 0 {
		cold = slices.Delete(cold, hotAt, hotAt+1)
	}
	var views []string
	if !v.noVersions {
		views = append(views, `CREATE VIEW `+database+`.`+rel(p.out, "readings_versions")+` AS `+strings.Join(versions, ` UNION ALL `))
	}
	views = append(views, `CREATE VIEW `+database+`.`+rel(p.out, "readings")+` AS `+strings.Join(resolved, ` UNION ALL `))
	inst.define(stmts...)
	return strings.Join(cold, ` UNION ALL `), views, nil
}

// coldSelect returns the SELECT of the cold rows from files, which are
// not empty: every column of the layout, cast to its type, NULL where no
// file has it (a nullable column added after they were written), and with
// superseded the files' column of that name. A column of the files that
// the table does not declare is not shown. have names the columns the
// files have; if it is nil, DuckDB reads their schemas to tell. uniform
// says that every file has the same columns: DuckDB then binds the scan by
// the first file's footer alone, not by each one's.
func coldSelect(ctx context.Context, inst *instance, l layout, files []string, have map[string]bool, uniform, superseded bool) (string, error) {
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = quote(f)
	}
	// Not hive partitioning: the paths name partitions that are columns
	// of the files too.
	byName := "true"
	if uniform && have != nil {
		byName = "false"
	}
	scan := `read_parquet([` + strings.Join(quoted, ", ") + `], union_by_name = ` + byName + `, hive_partitioning = false)`
	if have == nil {
		if err := inst.need(ctx); err != nil {
			return "", err
		}
		var err error
		if have, err = describe(ctx, inst.conn, scan); err != nil {
			return "", err
		}
	}
	sel := make([]string, len(l.cols), len(l.cols)+1)
	for i, c := range l.cols {
		src := "NULL"
		if have[c.name] {
			src = ident(c.name)
		}
		sel[i] = `CAST(` + src + ` AS ` + c.typ + `) AS ` + ident(c.name)
	}
	if superseded {
		sel = append(sel, ident(series.ColumnSuperseded))
	}
	return `SELECT ` + strings.Join(sel, ", ") + ` FROM ` + scan, nil
}

// describe returns the names of the columns of scan, as DuckDB reads them.
func describe(ctx context.Context, conn *sql.Conn, scan string) (map[string]bool, error) {
	rows, err := conn.QueryContext(ctx, `DESCRIBE SELECT * FROM `+scan)
	if err != nil {
		return nil, fmt.Errorf("query: read the schema of the cold files: %w", err)
	}
	defer rows.Close()
	have := map[string]bool{}
	names, err := rows.Columns()
	if err != nil {
		return nil, fmt.Errorf("query: read the schema of the cold files: %w", err)
	}
	for rows.Next() {
		vals := make([]any, len(names))
		ptrs := make([]any, len(names))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("query: read the schema of the cold files: %w", err)
		}
		if name, ok := vals[0].(string); ok {
			have[name] = true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query: read the schema of the cold files: %w", err)
	}
	return have, nil
}

// timestamptz returns t as a TIMESTAMPTZ literal, at microseconds.
func timestamptz(t time.Time) string {
	return `TIMESTAMPTZ ` + quote(t.UTC().Format("2006-01-02 15:04:05.000000")+"+00")
}
