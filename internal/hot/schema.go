package hot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// definition is what hot_tables records of a declaration: everything that
// shapes the relation. Headroom and the default commodity are left out,
// because changing them changes no stored row.
type definition struct {
	Format      int         `json:"format"`
	TimeModel   string      `json:"time_model"`
	MergeKey    []string    `json:"merge_key"`
	Resolutions []string    `json:"resolutions"`
	Columns     []columnDef `json:"columns"`
	Width       string      `json:"width"`
	// Exclusion is format 1's integrity: true for exclusion, false for
	// write. Format 2 records Integrity instead.
	Exclusion bool   `json:"exclusion,omitempty"`
	Integrity string `json:"integrity,omitempty"`
	// Layout is how the rows are stored: "dictionary" (layout_dictionary.go),
	// or absent for the rows layout every table had before it.
	Layout string `json:"layout,omitempty"`
}

// layout returns the recorded layout.
func (d definition) layout() (layout, error) { return parseLayout(d.Layout) }

// normalize returns d in format 2.
func (d definition) normalize() definition {
	if d.Format == 1 {
		d.Format, d.Integrity = 2, series.IntegrityWrite.String()
		if d.Exclusion {
			d.Integrity = series.IntegrityExclusion.String()
		}
		d.Exclusion = false
	}
	return d
}

// integrity returns the recorded integrity.
func (d definition) integrity() (series.Integrity, error) {
	i, err := series.ParseIntegrity(d.Integrity)
	if err == nil && i == series.IntegrityAuto {
		err = errors.New("integrity auto recorded")
	}
	return i, err
}

type columnDef struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Identity bool     `json:"identity"`
	Values   []string `json:"values"`
	// Undeclared marks a column the last declaration no longer has: the
	// relation keeps it, with the values others wrote (see series.Evolution).
	Undeclared bool `json:"undeclared,omitempty"`
}

// definitionOf returns the definition of t declared with integrity i,
// which is not IntegrityAuto.
func definitionOf(t *series.Table, i series.Integrity) definition {
	d := definition{
		Format:      2,
		TimeModel:   t.TimeModel.String(),
		MergeKey:    t.MergeKey(),
		Resolutions: []string{},
		Columns:     []columnDef{},
		Width:       t.Width.String(),
		Integrity:   i.String(),
		Layout:      newLayout(i).String(),
	}
	for _, r := range t.AcceptedResolutions() {
		d.Resolutions = append(d.Resolutions, r.String())
	}
	for _, c := range t.Columns {
		vs := slices.Clone(c.Values)
		if vs == nil {
			vs = []string{}
		}
		d.Columns = append(d.Columns, columnDef{Name: c.Name, Type: c.ColumnType().String(), Identity: c.Identity, Values: vs})
	}
	return d
}

// metaTable is the metadata table in the tier's schema; series.Table.Validate
// refuses it as a table name.
const metaTable = "hot_tables"

// Ensure declares t: it creates the schema, the metadata table and the
// partitioned parent if they do not exist, and records the declaration.
// Declaring a table again with the same definition does nothing. Its
// extra columns may evolve by series.Evolve's rule: nullable columns added
// are added to the relation in the transaction that records the new
// definition, each ALTER waiting for its locks no longer than the DDL lock
// timeout; after evolveAttempts deferrals Ensure fails with ErrDeferred
// (retryable) and nothing changed. A nullable column no longer declared
// is never dropped: the definition records it undeclared, and declaring
// it again takes it back as it is. A change the
// rule refuses fails with a *series.QuarantineError, and a different
// time model, width, resolutions or merge key order with InvalidConfig,
// since the stored rows were written under the first; neither changes
// anything. Partitions are made by EnsurePartitions.
func (h *Tier) Ensure(ctx context.Context, t *series.Table) error {
	if err := t.Validate(); err != nil {
		return err
	}
	const op = "ensure"
	var (
		info      tableInfo
		upgrading bool
	)
	err := h.ensureRetrying(ctx, op, t.Name, func(tx pgx.Tx) error {
		if err := h.ensureBase(ctx, tx); err != nil {
			return err
		}
		var stored []byte
		err := tx.QueryRow(ctx, `SELECT definition FROM `+h.ident(metaTable)+` WHERE name = $1`, t.Name).Scan(&stored)
		var exists bool
		if err2 := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, h.ident(t.Name)).Scan(&exists); err2 != nil {
			return err2
		}
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			if exists {
				return &series.Error{Kind: series.InvalidConfig, Op: op, Table: t.Name, Err: fmt.Errorf("relation %s exists but was not declared through MeterStore", h.ident(t.Name))}
			}
			info, err = h.create(ctx, tx, t)
		case err == nil:
			info, upgrading, err = h.redeclare(ctx, tx, t, stored, exists)
		}
		return err
	})
	switch {
	case err == nil && upgrading:
		// Phase 1 committed; the rest takes no lock a writer waits for
		// long (upgrade.go).
		err = h.completeUpgrade(ctx, t)
	case err == nil && info.integrity == series.IntegrityStatement && info.layout == layoutRows:
		// Those an upgrade could not drop in time.
		h.dropExclusions(ctx, t)
	}
	if err == nil {
		h.remember(t.Name, info)
		h.validatePending(ctx, t)
	}
	return err
}

// ensureBase makes, in tx, what every table needs first, unless it is
// there: the schema, the metadata table and the functions.
func (h *Tier) ensureBase(ctx context.Context, tx pgx.Tx) error {
	// Serializes concurrent declarations: CREATE ... IF NOT EXISTS
	// is not safe against a concurrent CREATE of the same name.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, 0)`, h.lockKey(metaTable)); err != nil {
		return err
	}
	for _, stmt := range h.baseDDL() {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return err
		}
	}
	if err := h.ensureFunctions(ctx, tx); err != nil {
		return err
	}
	return h.ensureFloorColumn(ctx, tx)
}

// create declares t, which is new, in tx: it chooses its integrity and
// layout, creates its relations in that layout (tableDDL) and records
// the definition.
func (h *Tier) create(ctx context.Context, tx pgx.Tx, t *series.Table) (tableInfo, error) {
	chosen := newIntegrity(t)
	lay := newLayout(chosen)
	if chosen == series.IntegrityStatement && h.statementLayout != nil {
		lay = h.statementLayout
	}
	if err := h.refuseTaken(ctx, tx, "ensure", t, chosen, lay); err != nil {
		return tableInfo{}, err
	}
	for _, stmt := range h.tableDDL(t, chosen, lay) {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			return tableInfo{}, err
		}
	}
	want := definitionOf(t, chosen)
	want.Layout = lay.String()
	def, _ := json.Marshal(want)
	if _, err := tx.Exec(ctx, `INSERT INTO `+h.ident(metaTable)+` (name, time_model, merge_key, definition) VALUES ($1, $2, $3, $4)`,
		t.Name, want.TimeModel, want.MergeKey, def); err != nil {
		return tableInfo{}, err
	}
	h.log.Info("hot: table declared", "table", t.Name, "merge_key", want.MergeKey, "integrity", chosen, "layout", lay.String())
	return tableInfo{integrity: chosen, layout: lay}, nil
}

// redeclare declares t again in tx, over its stored definition: the
// relation, which must exist, keeps its layout and integrity, but for an
// upgrade to IntegrityStatement, and its columns evolve; a table of
// IntegrityStatement gets the check function of its layout. upgrading
// reports an upgrade whose first phase tx holds (see upgrade.go); the
// caller completes it once tx committed.
func (h *Tier) redeclare(ctx context.Context, tx pgx.Tx, t *series.Table, stored []byte, exists bool) (_ tableInfo, upgrading bool, _ error) {
	var have definition
	if err := json.Unmarshal(stored, &have); err != nil {
		return tableInfo{}, false, &series.Error{Kind: series.InvariantViolation, Op: "ensure", Table: t.Name, Err: fmt.Errorf("stored definition: %w", err)}
	}
	have = have.normalize()
	chosen, err := have.integrity()
	var lay layout
	if err == nil {
		lay, err = have.layout()
	}
	if err != nil {
		return tableInfo{}, false, &series.Error{Kind: series.InvariantViolation, Op: "ensure", Table: t.Name, Err: fmt.Errorf("stored definition: %w", err)}
	}
	want := definitionOf(t, t.Integrity)
	// A table keeps the layout it was created in, whatever a new
	// table of this declaration would get: its rows are stored so.
	want.Layout = have.Layout
	upgrade := t.Integrity == series.IntegrityStatement && chosen != series.IntegrityStatement
	if t.Integrity == series.IntegrityAuto || upgrade {
		// A table keeps the integrity it was declared with, which
		// every one of them enforces for Write, unless declared
		// with statement, which it is upgraded to below; any other
		// change is refused.
		want.Integrity = have.Integrity
	}
	// The columns may evolve by series.Evolve's rule; anything else
	// that shapes the relation is fixed.
	fixed := have
	fixed.Columns, fixed.MergeKey = want.Columns, want.MergeKey
	if diff := compareDefinitions(fixed, want); diff != "" {
		return tableInfo{}, false, &series.Error{Kind: series.InvalidConfig, Op: "ensure", Table: t.Name, Err: fmt.Errorf("declared differently before: %s", diff)}
	}
	ev, err := series.Evolve(t.Name, have.columns(), t.Columns)
	if err != nil {
		return tableInfo{}, false, err // a *series.QuarantineError: nothing changes
	}
	want.Columns = append(want.Columns, undeclared(ev.Undeclared)...)
	if !slices.Equal(have.MergeKey, want.MergeKey) {
		return tableInfo{}, false, &series.Error{Kind: series.InvalidConfig, Op: "ensure", Table: t.Name, Err: fmt.Errorf("declared differently before: merge key (%s), now (%s)",
			strings.Join(have.MergeKey, ", "), strings.Join(want.MergeKey, ", "))}
	}
	if !exists {
		return tableInfo{}, false, &series.Error{Kind: series.InvariantViolation, Op: "ensure", Table: t.Name, Err: fmt.Errorf("declared, but relation %s is missing", h.ident(t.Name))}
	}
	if !reflect.DeepEqual(have.Columns, want.Columns) {
		evolved := have
		evolved.Columns = want.Columns
		if err := h.evolve(ctx, tx, t, ev, evolved); err != nil {
			return tableInfo{}, false, err
		}
		have = evolved
	}
	switch {
	case upgrade:
		if err := h.beginUpgrade(ctx, tx, t); err != nil {
			return tableInfo{}, false, err
		}
		return tableInfo{integrity: series.IntegrityStatement, layout: lay}, true, nil
	case chosen == series.IntegrityStatement:
		// The aggregate first: the new check body appends to its log.
		if err := h.ensureDays(ctx, tx, t, lay); err != nil {
			return tableInfo{}, false, err
		}
		if err := h.ensureDayTokens(ctx, tx, t, lay); err != nil {
			return tableInfo{}, false, err
		}
		if len(lay.dictNames(t)) > 0 {
			if err := h.upgradeSeriesOwners(ctx, tx, t); err != nil {
				return tableInfo{}, false, err
			}
		}
		if err := h.refreshCheckFunc(ctx, tx, t, lay); err != nil {
			return tableInfo{}, false, err
		}
	}
	return tableInfo{integrity: chosen, layout: lay}, false, nil
}

// newIntegrity returns the integrity a new table gets: the declared one,
// or for IntegrityAuto the cheapest that PostgreSQL enforces for every
// client.
func newIntegrity(t *series.Table) series.Integrity {
	switch {
	case t.Integrity != series.IntegrityAuto:
		return t.Integrity
	case t.StatementCapable():
		return series.IntegrityStatement
	}
	return series.IntegrityExclusion
}

// tableDDL returns the statements that create t's parent, with integrity i,
// in layout l.
func (h *Tier) tableDDL(t *series.Table, i series.Integrity, l layout) []string {
	stmts := []string{l.parentDDL(h, t, i)}
	if i == series.IntegrityStatement {
		stmts = append(stmts, l.statementDDL(h, t)...)
		stmts = append(stmts, h.triggerDDL(t, h.ident(t.Name), t.Name)...)
	}
	return stmts
}

// compareDefinitions describes the first difference between a stored and a
// new declaration, the key and the time model first, or returns "".
func compareDefinitions(have, want definition) string {
	switch {
	case have.TimeModel != want.TimeModel:
		return fmt.Sprintf("time model %s, now %s", have.TimeModel, want.TimeModel)
	case !slices.Equal(have.MergeKey, want.MergeKey):
		return fmt.Sprintf("merge key (%s), now (%s)", strings.Join(have.MergeKey, ", "), strings.Join(want.MergeKey, ", "))
	case have.Width != want.Width:
		return fmt.Sprintf("partition width %s, now %s", have.Width, want.Width)
	case have.Integrity != want.Integrity:
		return fmt.Sprintf("integrity %s, now %s (a declared table keeps its integrity but for an upgrade to statement: leave it unset, or purge and declare anew)", have.Integrity, want.Integrity)
	case !slices.Equal(have.Resolutions, want.Resolutions):
		return fmt.Sprintf("resolutions %v, now %v", have.Resolutions, want.Resolutions)
	case !reflect.DeepEqual(have.Columns, want.Columns):
		return fmt.Sprintf("columns %+v, now %+v", have.Columns, want.Columns)
	case !reflect.DeepEqual(have, want):
		return fmt.Sprintf("%+v, now %+v", have, want)
	}
	return ""
}

// baseDDL returns the idempotent statements every table needs first.
// btree_gist gives GiST the scalar equality the exclusion constraints of
// the tables and of the ownership relations combine with range overlap.
func (h *Tier) baseDDL() []string {
	stmts := []string{`CREATE SCHEMA IF NOT EXISTS ` + quote(h.schema), `CREATE EXTENSION IF NOT EXISTS btree_gist`}
	return append(stmts, `CREATE TABLE IF NOT EXISTS `+h.ident(metaTable)+` (
	name        text PRIMARY KEY,
	time_model  text NOT NULL,
	merge_key   text[] NOT NULL,
	definition  jsonb NOT NULL,
	declared_at timestamptz NOT NULL DEFAULT now(),
	`+floorColumn+` timestamptz
)`)
}

// ensureFunctions creates the functions the CHECK constraints and the
// triggers call, unless they exist as they are. A function whose body
// changed is replaced in place: constraints refer to it by oid, and every
// body it ever had says the same.
func (h *Tier) ensureFunctions(ctx context.Context, tx pgx.Tx) error {
	for _, f := range []struct{ signature, body, create string }{
		{h.ident("malo_valid") + "(text)", maloValidBody, `CREATE OR REPLACE FUNCTION ` + h.ident("malo_valid") +
			`(id text) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$` + maloValidBody + `$$`},
		{h.ident(immutableFunc) + "()", immutableBody, `CREATE OR REPLACE FUNCTION ` + h.ident(immutableFunc) +
			`() RETURNS trigger LANGUAGE plpgsql AS $$` + immutableBody + `$$`},
		{h.ident(guardFunc) + "()", guardBody, `CREATE OR REPLACE FUNCTION ` + h.ident(guardFunc) +
			`() RETURNS trigger LANGUAGE plpgsql AS $$` + guardBody + `$$`},
		{h.ident(tokenFunc) + "()", tokenBody, `CREATE OR REPLACE FUNCTION ` + h.ident(tokenFunc) +
			`() RETURNS trigger LANGUAGE plpgsql AS $$` + tokenBody + `$$`},
	} {
		var have string
		err := tx.QueryRow(ctx, `SELECT prosrc FROM pg_proc WHERE oid = to_regprocedure($1)`, f.signature).Scan(&have)
		switch {
		case err == nil && have == f.body:
			continue
		case err != nil && !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if _, err := tx.Exec(ctx, f.create); err != nil {
			return err
		}
	}
	return nil
}

// maloValidBody is the BDEW rule of metering.ParseMaLo: digits at even
// positions count twice, undoubled beyond that, and the eleventh tops the
// sum up to a multiple of ten. A simple SQL function, so the planner
// inlines it into the CHECK.
//
// Once the id is known to be eleven digits, it is read as hexadecimal,
// which puts each digit in a nibble of a bigint h, the first highest:
// (h >> 8) & 0x0F0F0F0F0F holds the digits at odd positions 1 to 9 in five
// bytes, (h >> 4) & 0x0F0F0F0F0F those at even positions 2 to 10. Their
// weighted sum is the sum of the bytes of the first plus twice the second,
// at most 135, which is that number modulo 255 (256 = 1 modulo 255). It
// costs a third of picking the digits out one by one with substr.
const maloValidBody = `
SELECT CASE WHEN length(id) = 11 AND id ~ '^[1-9][0-9]*$'
	THEN (10 - (((('x' || id)::bit(44)::int8 >> 8) & 64677154575)
		+ 2 * ((('x' || id)::bit(44)::int8 >> 4) & 64677154575)) % 255 % 10) % 10
		= ('x' || id)::bit(44)::int8 & 15
	ELSE false END
`

// obisGroup matches one group of a canonical OBIS code: up to three digits
// without a leading zero. That a group is at most 255 is left to Write:
// the alternation that says so in a regular expression doubles its cost.
const obisGroup = `(?:0|[1-9][0-9]?[0-9]?)`

// sqlList returns the values as a parenthesized list of SQL string literals.
func sqlList(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
	}
	return "(" + strings.Join(q, ", ") + ")"
}

// columnDefs returns the definitions of the columns every layout declares
// alike, by name, with the CHECK constraints named as the errors of
// every layout name them. The rows layout holds them all in the table;
// the dictionary layout spreads them over the table and its dictionaries.
func columnDefs(t *series.Table) map[string]string {
	var rs []string
	for _, r := range t.AcceptedResolutions() {
		rs = append(rs, r.String())
	}
	return map[string]string{
		"melo_id":       fmt.Sprintf(`melo_id text CONSTRAINT melo_id_check CHECK (length(melo_id) = 33 AND melo_id ~ '^[A-Z][A-Z]%s[A-Z0-9]+$')`, strings.Repeat("[0-9]", 11)),
		"sparte":        `sparte text NOT NULL CONSTRAINT sparte_check CHECK (sparte IN ` + sqlList(metering.Spellings(metering.Commodities())) + `)`,
		"from":          `"from" timestamptz NOT NULL`,
		"to":            `"to" timestamptz NOT NULL`,
		"value":         `value numeric(18,6) NOT NULL CONSTRAINT value_check CHECK (value <> 'NaN')`,
		"unit":          `unit text NOT NULL CONSTRAINT unit_check CHECK (unit IN ` + sqlList(metering.Spellings(metering.Units())) + `)`,
		"quality":       `quality text NOT NULL CONSTRAINT quality_check CHECK (quality IN ` + sqlList(metering.Spellings(metering.Qualities())) + `)`,
		"resolution":    `resolution text NOT NULL CONSTRAINT resolution_check CHECK (resolution IN ` + sqlList(rs) + `)`,
		"version":       `version numeric(20,0) NOT NULL CONSTRAINT version_check CHECK (version BETWEEN 0 AND 18446744073709551615)`,
		"version_scope": `version_scope text NOT NULL CONSTRAINT version_scope_check CHECK (` + scopeValid("version_scope") + `)`,
		"recorded_at":   `recorded_at timestamptz NOT NULL DEFAULT now()`,
		"balancing_day": `balancing_day date NOT NULL`,
		"subject_id":    `subject_id text CONSTRAINT subject_id_check CHECK (subject_id <> '')`,
	}
}

// gridCheck returns the condition that an interval lies on the grid of its
// resolution and lasts one step of it, as Write checks: quarter hours start
// at :00, :15, :30 and :45; days at Berlin midnight, or 06:00 for gas;
// months on the first, years on January 1. Intervals on these grids are
// nested or disjoint, and two of one resolution overlap only if equal, so
// in a table of one resolution the primary key alone rules out overlaps
// within a version.
func gridCheck(t *series.Table) string {
	const local = `("from" AT TIME ZONE 'Europe/Berlin')`
	start := local + `::time = CASE WHEN sparte = 'GAS' THEN time '06:00' ELSE time '00:00' END`
	var when []string
	for _, r := range t.AcceptedResolutions() {
		var cond string
		if d, ok := r.Fixed(); ok {
			secs := int64(d.Seconds())
			// date_bin, unlike extract(epoch ...) % n, stays clear of
			// numeric arithmetic: a tenth of the cost.
			cond = fixedGrid(secs)
		} else {
			step := map[metering.Resolution]string{metering.Day: "1 day", metering.Month: "1 month", metering.Year: "1 year"}[r]
			cond = start + fmt.Sprintf(` AND "to" = (%s + interval '%s') AT TIME ZONE 'Europe/Berlin'`, local, step)
			if r >= metering.Month {
				cond += ` AND extract(day FROM ` + local + `) = 1`
			}
			if r == metering.Year {
				cond += ` AND extract(month FROM ` + local + `) = 1`
			}
		}
		when = append(when, fmt.Sprintf(`WHEN '%s' THEN %s`, r, cond))
	}
	return `CASE resolution ` + strings.Join(when, " ") + ` ELSE false END`
}

// fixedGrid returns the condition that an interval lasts one step of secs
// seconds and starts on the grid of that step from the epoch.
func fixedGrid(secs int64) string {
	return fmt.Sprintf(`"to" - "from" = interval '%[1]d seconds' AND date_bin(interval '%[1]d seconds', "from", timestamptz '1970-01-01 00:00:00+00') = "from"`, secs)
}

// keyList returns the quoted merge key columns, and version if withVersion.
func keyList(t *series.Table, withVersion bool) string {
	var q []string
	for _, c := range t.MergeKey() {
		q = append(q, quote(c))
	}
	if withVersion {
		q = append(q, "version")
	}
	return strings.Join(q, ", ")
}
