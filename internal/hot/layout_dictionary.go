package hot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

// The dictionary layout.
//
// A new table of IntegrityStatement stores its readings in the dictionary
// layout: what many readings share lives once in two dictionaries, and a
// reading carries two int4 ids in their place. The heap and the primary
// key shrink to about two thirds of the rows layout (145 against 229
// bytes a reading, measured with 989,184 readings).
//
//   - <table>_series holds the merge key but from, per bucket (the start
//     of the partition a reading's from falls in): market location, OBIS
//     code and identity columns, with the CHECKs of their ids and codes,
//     so a bad id or code is refused once per series, for every client.
//   - <table>_attrs holds, per bucket, what is the same for many readings
//     of a delivery: commodity, unit, resolution, version scope, MeLo and
//     subject, with their CHECKs.
//   - <table> itself holds series and attr ids, the interval, value,
//     quality, version, recorded_at, balancing day and the attribute
//     columns, with the primary key (series, from, version): a series id
//     stands for its merge key within its bucket, so that key is the
//     merge key plus version.
//
// The statement check (dictLayout.checkBody) refuses a reading whose
// series or attr id does not name a dictionary row of its own bucket
// (SQLSTATE 23503), which is what keeps a plain client from reusing a
// series id of another day past the primary key, and records the
// operators' spans in a row per series id (owners_series.go). The dictionaries are
// never updated, and deleted from only where a partition is dropped or the
// table purged, which set meterstore.forget for their transaction; the
// guard trigger refuses every other UPDATE, DELETE and TRUNCATE.
//
// Ids are per bucket, so dropping a partition deletes its buckets'
// dictionary rows and the dictionaries never outgrow the hot window. They
// come from an identity cycling through the int4 range: an id still in use
// when it comes round again makes the insert fail with a unique violation,
// never a wrong row.

// dictLayout stores ids of the table's dictionaries in place of what many
// readings share. hot_tables records it as "dictionary".
type dictLayout struct{}

func (dictLayout) String() string { return "dictionary" }

// seriesName and attrsName return the names of t's dictionaries.
func seriesName(t *series.Table) string { return t.Name + "_series" }
func attrsName(t *series.Table) string  { return t.Name + "_attrs" }

// guardFunc is the schema's trigger function that keeps the dictionaries'
// rows in place.
const guardFunc = "hot_dictionary_guard"

// guardBody refuses an UPDATE of a dictionary, and a DELETE or TRUNCATE
// but where a partition is dropped or the table purged: readings refer to
// the rows by id, which a changed or missing row would make name another
// series, or none.
const guardBody = `
BEGIN
	IF TG_OP = 'UPDATE' OR current_setting('meterstore.forget', true) IS DISTINCT FROM 'on' THEN
		RAISE EXCEPTION 'rows of relation "%" are not changed: readings refer to them by id (% refused)', TG_TABLE_NAME, TG_OP
			USING ERRCODE = 'restrict_violation';
	END IF;
	RETURN NULL;
END
`

// idColumn is the id of a dictionary row: an int4 identity that cycles
// through the whole range, starting at its lowest value.
const idColumn = `id int4 GENERATED ALWAYS AS IDENTITY (MINVALUE -2147483648 START WITH -2147483648 CYCLE) PRIMARY KEY`

// dictionaries returns the key columns of t's two dictionaries.
func dictionaries(t *series.Table) (ser, attrs dictionary) {
	ser = dictionary{name: seriesName(t), cols: []string{"bucket", "malo_id", "obis_code"}, types: []string{"timestamptz", "text", "text"}}
	for _, c := range t.Identity() {
		ser.cols = append(ser.cols, c.Name)
		ser.types = append(ser.types, c.ColumnType().String())
	}
	ser.null = make([]bool, len(ser.cols))
	attrs = dictionary{name: attrsName(t),
		cols:  []string{"bucket", "sparte", "unit", "resolution", "version_scope", "melo_id", "subject_id"},
		types: []string{"timestamptz", "text", "text", "text", "text", "text", "text"},
		null:  []bool{false, false, false, false, false, true, true}}
	return ser, attrs
}

// statementDDL returns t's dictionaries, its ownership relation, keyed by
// series id, and its check function.
func (l dictLayout) statementDDL(h *Tier, t *series.Table) []string {
	c := columnDefs(t)
	ser := []string{idColumn, "bucket timestamptz NOT NULL",
		`malo_id text NOT NULL CONSTRAINT malo_id_check CHECK (` + h.ident("malo_valid") + `(malo_id))`,
		`obis_code text NOT NULL CONSTRAINT obis_code_check CHECK (` + obisValid("obis_code") + `)`}
	key := []string{"bucket", "malo_id", "obis_code"}
	for _, col := range t.Identity() {
		ser = append(ser, columnDDL(col))
		key = append(key, quote(col.Name))
	}
	ser = append(ser, `CONSTRAINT `+quote(seriesName(t)+"_key")+` UNIQUE (`+strings.Join(key, ", ")+`)`)
	attrs := []string{idColumn, "bucket timestamptz NOT NULL", c["melo_id"], c["sparte"], c["unit"], c["resolution"], c["version_scope"], c["subject_id"],
		`CONSTRAINT ` + quote(attrsName(t)+"_key") + ` UNIQUE NULLS NOT DISTINCT (bucket, sparte, unit, resolution, version_scope, melo_id, subject_id)`}
	owners := h.ident(ownersName(t))
	stmts := []string{
		`CREATE TABLE ` + h.ident(seriesName(t)) + ` (` + strings.Join(ser, ", ") + `)`,
		`COMMENT ON TABLE ` + h.ident(seriesName(t)) + ` IS 'MeterStore: the series of ` + t.Name + ` per bucket; readings carry their id'`,
		`CREATE TABLE ` + h.ident(attrsName(t)) + ` (` + strings.Join(attrs, ", ") + `)`,
		`COMMENT ON TABLE ` + h.ident(attrsName(t)) + ` IS 'MeterStore: the attributes many readings of ` + t.Name + ` share, per bucket; readings carry their id'`,
		seriesOwnersDDL(owners),
		`COMMENT ON TABLE ` + owners + ` IS ` + ownersComment(t),
		h.checkFuncDDL(t, l),
	}
	stmts = append(stmts, h.daysDDL(t)...)
	for _, d := range l.dictNames(t) {
		stmts = append(stmts, `CREATE TRIGGER `+quote(d+"_guard")+` BEFORE UPDATE OR DELETE OR TRUNCATE ON `+h.ident(d)+
			` FOR EACH STATEMENT EXECUTE FUNCTION `+h.ident(guardFunc)+`()`)
	}
	return stmts
}

// parentDDL returns the CREATE TABLE of the partitioned parent of t, whose
// integrity is IntegrityStatement. t has one resolution of fixed length
// (t.StatementCapable), so the grid needs no commodity.
func (l dictLayout) parentDDL(h *Tier, t *series.Table, _ series.Integrity) string {
	c := columnDefs(t)
	step, _ := t.AcceptedResolutions()[0].Fixed()
	// The fixed-width columns first, widest first, then the short
	// variable-width ones, which need no alignment: no padding within the
	// row, about 8 bytes a reading less than in declaration order.
	cols := []string{"series int4 NOT NULL", "attr int4 NOT NULL", c["from"], c["to"], c["recorded_at"], c["balancing_day"],
		c["value"], c["quality"], c["version"]}
	for _, col := range t.Columns {
		if !col.Identity {
			cols = append(cols, columnDDL(col))
		}
	}
	cols = append(cols, `CONSTRAINT interval_valid CHECK (`+fixedGrid(int64(step.Seconds()))+`)`,
		fmt.Sprintf(`CONSTRAINT %s PRIMARY KEY (%s)`, quote(t.Name+"_pkey"), l.primaryKey(t)))
	return `CREATE TABLE ` + h.ident(t.Name) + " (\n\t" + strings.Join(cols, ",\n\t") + "\n) PARTITION BY RANGE (\"from\")"
}

// primaryKey is the series id, from and version: a series id stands for
// its merge key but from within its bucket.
func (dictLayout) primaryKey(*series.Table) string { return `series, "from", version` }

// natural is a subquery joining rel's rows to their dictionary rows,
// which also yields the series id.
func (dictLayout) natural(h *Tier, t *series.Table, rel string) string {
	cols := []string{"r.series", "s.malo_id", "a.melo_id", "s.obis_code", "a.sparte", `r."from"`, `r."to"`, "r.value", "a.unit",
		"r.quality", "a.resolution", "r.version", "a.version_scope", "r.recorded_at", "r.balancing_day", "a.subject_id"}
	for _, c := range t.Columns {
		if c.Identity {
			cols = append(cols, "s."+quote(c.Name))
		} else {
			cols = append(cols, "r."+quote(c.Name))
		}
	}
	return `(SELECT ` + strings.Join(cols, ", ") + ` FROM ` + rel + ` r JOIN ` + h.ident(seriesName(t)) + ` s ON s.id = r.series JOIN ` +
		h.ident(attrsName(t)) + ` a ON a.id = r.attr)`
}

// checkBody returns the body of the statement check function of t. The
// new rows are aggregated once, by series, attr and version; the ids are
// checked against the dictionaries per group, and the spans of each
// series, operator, version and bucket (a span per row for a group with
// a gap) are merged into the series' row of the ownership relation
// (seriesOwnersSQL). A series or attr id names a dictionary row of one
// bucket, so a group whose first and last from fall in different buckets
// has a row naming an id of another bucket, and is refused as such: the
// bucket is computed per group, not per row. An id's bucket is looked up
// by a scalar subquery on the id, its primary key: a batch names a few
// ids, and NOT EXISTS let the planner, which cannot tell how few, hash
// the whole dictionary for every statement (1.2 ms a batch of the attrs
// of 30,000 meters, measured).
func (dictLayout) checkBody(h *Tier, t *series.Table) string {
	return dictCheckBody(h, t, checkExprs{
		from:  func(r string) string { return r + `"from"` },
		to:    func(r string) string { return r + `"to"` },
		spans: `min("from") AS lo, max("from") AS last, max("to") AS hi`,
		vtype: "numeric",
	})
}

// checkExprs says how dictCheckBody reads a layout's stored rows: from(r)
// and to(r) are the interval of row r (alias and dot), spans the first
// start, last start and last end of a group of rows as lo, last and hi,
// and vtype the type of the version column.
type checkExprs struct {
	from, to func(r string) string
	spans    string
	vtype    string
}

// dictCheckBody returns the dictionary layouts' check body, with e how
// it reads the stored rows.
func dictCheckBody(h *Tier, t *series.Table, e checkExprs) string {
	ser, attrs := h.ident(seriesName(t)), h.ident(attrsName(t))
	owners := h.ident(ownersName(t))
	// fkey raises the error a foreign key on column col to dictionary
	// dict would, if the SELECT before it found an id without its row.
	fkey := func(col, dict string) string {
		c := dict + "_fkey"
		return `
	IF FOUND THEN
		RAISE EXCEPTION 'insert or update on table "%" violates foreign key constraint "%"', TG_TABLE_NAME, '` + c + `'
			USING ERRCODE = 'foreign_key_violation', CONSTRAINT = '` + c + `', TABLE = TG_TABLE_NAME, SCHEMA = TG_TABLE_SCHEMA,
			DETAIL = format('Key (` + col + `)=(%s) is not present in table "` + dict + `" for the bucket %s of its "from".', v_bad, v_badb);
	END IF;`
	}
	g := `unnest(v_gs, v_gop, v_gv, v_gb, v_glo, v_ghi, v_gn) AS u(s, op, v, b, lo, hi, n)`
	whole := wholeCond(t, "u.")
	return `
DECLARE
	v_s int4[]; v_a int4[]; v_v ` + e.vtype + `[]; v_b timestamptz[]; v_b2 timestamptz[]; v_lo timestamptz[]; v_hi timestamptz[]; v_n int8[];
	v_gs int4[]; v_gop text[]; v_gv ` + e.vtype + `[]; v_gb timestamptz[]; v_glo timestamptz[]; v_ghi timestamptz[]; v_gn int8[];
	v_cs int4[]; v_cop text[]; v_cr tstzrange[];
	v_bad int4; v_badb timestamptz;
BEGIN
	SELECT array_agg(series), array_agg(attr), array_agg(version), array_agg(` + bucketExpr(t, "lo") + `),
		array_agg(` + bucketExpr(t, "last") + `), array_agg(lo), array_agg(hi), array_agg(n)
	INTO v_s, v_a, v_v, v_b, v_b2, v_lo, v_hi, v_n
	FROM (SELECT series, attr, version, ` + e.spans + `, count(*) AS n
		FROM new_rows GROUP BY series, attr, version) g;
	IF v_s IS NULL THEN
		RETURN NULL;
	END IF;
	SELECT u.s, u.b2 INTO v_bad, v_badb FROM (SELECT DISTINCT * FROM unnest(v_s, v_b, v_b2) AS x(s, b, b2)) u
	WHERE (u.b = u.b2) IS NOT TRUE OR (SELECT d.bucket FROM ` + ser + ` d WHERE d.id = u.s) IS DISTINCT FROM u.b LIMIT 1;` + fkey("series", seriesName(t)) + `
	SELECT u.a, u.b2 INTO v_bad, v_badb FROM (SELECT DISTINCT * FROM unnest(v_a, v_b, v_b2) AS x(a, b, b2)) u
	WHERE (u.b = u.b2) IS NOT TRUE OR (SELECT d.bucket FROM ` + attrs + ` d WHERE d.id = u.a) IS DISTINCT FROM u.b LIMIT 1;` + fkey("attr", attrsName(t)) +
		dirtyAppend(h, t, "v_s", "v_b") + `
	SELECT array_agg(s), array_agg(op), array_agg(v), array_agg(b), array_agg(lo), array_agg(hi), array_agg(n)
	INTO v_gs, v_gop, v_gv, v_gb, v_glo, v_ghi, v_gn
	FROM (SELECT u.s, split_part(d.version_scope, ':', 1) AS op, u.v, u.b, min(u.lo) AS lo, max(u.hi) AS hi, sum(u.n)::int8 AS n
		FROM unnest(v_s, v_a, v_v, v_b, v_lo, v_hi, v_n) AS u(s, a, v, b, lo, hi, n) JOIN ` + attrs + ` d ON d.id = u.a
		GROUP BY u.s, split_part(d.version_scope, ':', 1), u.v, u.b) x;
	SELECT array_agg(u.s), array_agg(u.op), array_agg(tstzrange(u.lo, u.hi))
	INTO v_cs, v_cop, v_cr
	FROM ` + g + ` WHERE ` + whole + `;
	IF EXISTS (SELECT 1 FROM ` + g + ` WHERE NOT (` + whole + `)) THEN
		SELECT v_cs || array_agg(r.series), v_cop || array_agg(split_part(d.version_scope, ':', 1)), v_cr || array_agg(tstzrange(` + e.from("r.") + `, ` + e.to("r.") + `))
		INTO v_cs, v_cop, v_cr
		FROM new_rows r JOIN ` + attrs + ` d ON d.id = r.attr
		WHERE (r.series, split_part(d.version_scope, ':', 1), r.version, ` + bucketExpr(t, e.from("r.")) + `) IN
			(SELECT u.s, u.op, u.v, u.b FROM ` + g + ` WHERE NOT (` + whole + `));
	END IF;` + seriesOwnersSQL(owners, ownersName(t)+"_one", `unnest(v_cs, v_cop, v_cr) AS c(s, op, r)`) + `
	RETURN NULL;
END
`
}

// writeColumns are the ids, then what differs from reading to reading.
func (dictLayout) writeColumns(t *series.Table, quoted bool) []string {
	return withAttributes(t, quoted, "series", "attr", "from", "to", "value", "quality", "version", "balancing_day")
}

func (dictLayout) writeValues(v []any, t *series.Table, r *staged) []any {
	v = append(v, &r.series, &r.attr, &r.from, &r.to, &r.value, &r.quality, &r.version, &r.day)
	for i, c := range t.Columns {
		if !c.Identity {
			v = append(v, r.extra[i])
		}
	}
	return v
}

// stageIDs are the series and attr ids.
func (dictLayout) stageIDs() (cols, defs []string) {
	return []string{"series", "attr"}, []string{"series int4", "attr int4"}
}

func (dictLayout) stageIDValues(v []any, r *staged) []any { return append(v, &r.series, &r.attr) }

// resolve looks up the ids of the dictionary rows of b's rows, inserting
// the missing ones (resolveIDs).
func (dictLayout) resolve(ctx context.Context, h *Tier, tx pgx.Tx, t *series.Table, b *batch) error {
	return h.resolveIDs(ctx, tx, t, b, false)
}

// sameSeries compares the series ids: a run stays within a bucket.
func (dictLayout) sameSeries(a, b *staged) bool { return a.series == b.series }

// seriesOn compares the series ids: the series dictionary's key starts
// with the bucket, so it is no index for the natural columns.
func (dictLayout) seriesOn(_ *series.Table, p, s string) string {
	return p + `.series = ` + s + `.series`
}

// runKey sends the series ids; the version scope is the attrs
// dictionary's.
func (l dictLayout) runKey(h *Tier, t *series.Table) (cols, args []string, on, scope string) {
	return []string{"series"}, []string{"$4::int4[]"}, l.seriesOn(t, "p", "r"),
		`(SELECT a.version_scope FROM ` + h.ident(attrsName(t)) + ` a WHERE a.id = p.attr)`
}

func (dictLayout) runArgs(_ *series.Table, rows []staged, rs []versionRun) []any {
	ids := make([]int32, len(rs))
	for i, r := range rs {
		ids[i] = rows[r.first].series
	}
	return []any{ids}
}

func (dictLayout) dictNames(t *series.Table) []string { return []string{seriesName(t), attrsName(t)} }

// mergeKey is the series id and from.
func (dictLayout) mergeKey(*series.Table) []string { return []string{"series", "from"} }

// keyFilter selects the series ids of p's bucket whose series dictionary
// rows keys select.
func (l dictLayout) keyFilter(h *Tier, t *series.Table, p Partition, keys []string) []string {
	if len(keys) == 0 {
		return nil
	}
	sub := append([]string{`bucket = ` + timeLit(p.From)}, keys...)
	return []string{`series = ANY (ARRAY(SELECT id FROM ` + h.ident(seriesName(t)) + ` WHERE ` + strings.Join(sub, " AND ") + `))`}
}

// shape presents the rows with their ids and the columns they hold, and
// the two dictionaries, series first, with theirs.
func (dictLayout) shape(t *series.Table) Shape {
	ser, attrs := dictionaries(t)
	return dictShape(t, ser, attrs)
}

// dictShape returns the shape of t's readings with dictionaries ser and
// attrs.
func dictShape(t *series.Table, ser, attrs dictionary) Shape {
	all := readColumns(t)
	owner := map[string]int{} // natural column: 1 series, 2 attrs
	for _, c := range ser.cols[1:] {
		owner[c] = 1
	}
	for _, c := range append(attrs.cols[1:], attrs.fixedCols...) {
		owner[c] = 2
	}
	s := Shape{Series: "series"}
	s.Rows = Relation{Columns: []Column{{"series", KindInt32}, {"attr", KindInt32}}, Rows: -1}
	d := []Dict{
		{Relation: Relation{Columns: []Column{{"id", KindInt32}}, Rows: -1}, ID: "id", Ref: "series"},
		{Relation: Relation{Columns: []Column{{"id", KindInt32}}, Rows: -1}, ID: "id", Ref: "attr"},
	}
	for _, c := range all {
		if o := owner[c.Name]; o > 0 {
			d[o-1].Columns = append(d[o-1].Columns, c)
		} else {
			s.Rows.Columns = append(s.Rows.Columns, c)
		}
	}
	s.Dicts = d
	return s
}

// bucketText returns the bucket of a reading starting at from as the text
// the dictionaries' keys are matched by (see dictionary.outputs).
func bucketText(t *series.Table, from time.Time) string {
	return t.Width.Start(from).UTC().Format("2006-01-02 15:04:05") + "+00"
}

// forgetPartition deletes the dictionary rows of the buckets in [from,
// to), those of a dropped partition, in tx, which the guard trigger lets
// through for this transaction only, and their day sums.
func (l dictLayout) forgetPartition(ctx context.Context, h *Tier, tx pgx.Tx, t *series.Table, from, to time.Time) error {
	if _, err := tx.Exec(ctx, `SET LOCAL meterstore.forget = on`); err != nil {
		return err
	}
	for _, d := range l.dictNames(t) {
		if _, err := tx.Exec(ctx, `DELETE FROM `+h.ident(d)+` WHERE bucket >= $1 AND bucket < $2`, from, to); err != nil {
			return fmt.Errorf("forget the dictionary rows of %s: %w", d, err)
		}
	}
	if _, err := tx.Exec(ctx, `SET LOCAL meterstore.forget = off`); err != nil {
		return err
	}
	return h.forgetDays(ctx, tx, t, from, to)
}

func (dictLayout) columnExpr(*series.Table, string) string { return "" }

func (dictLayout) storedVersion(p string) string { return numericVersion(p) }

func (dictLayout) versionParam(v string) string { return v + "::numeric" }

func (l dictLayout) insertSelect(t *series.Table) []string { return l.writeColumns(t, true) }

// naturalSources takes the dictionaries' columns from the series s and
// the attributes a.
func (dictLayout) naturalSources(t *series.Table) map[string]string {
	src := map[string]string{}
	for _, c := range []string{"malo_id", "obis_code"} {
		src[c] = "s." + c
	}
	for _, c := range []string{"melo_id", "sparte", "unit", "resolution", "version_scope", "subject_id"} {
		src[c] = "a." + c
	}
	for _, c := range t.Columns {
		if c.Identity {
			src[c.Name] = "s." + quote(c.Name)
		}
	}
	return src
}

func (dictLayout) fromColumn() string                          { return rowsLayout{}.fromColumn() }
func (dictLayout) fromLit(t *series.Table, v time.Time) string { return rowsLayout{}.fromLit(t, v) }
func (dictLayout) fromExpr(t *series.Table, e string) string   { return e }
func (dictLayout) fromTime(t *series.Table, c string) string   { return c }

// withAttributes returns a layout's stored columns, cols, followed by t's
// attribute columns, each quoted if quoted is set.
func withAttributes(t *series.Table, quoted bool, cols ...string) []string {
	for _, c := range t.Columns {
		if !c.Identity {
			cols = append(cols, c.Name)
		}
	}
	if quoted {
		for i, c := range cols {
			cols[i] = quote(c)
		}
	}
	return cols
}
