package hot

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

// Tokens of the stored day sums.
//
// A copy of a partition's stored day sums kept outside PostgreSQL (the
// query engine keeps one beside its file cache) is exact only while the
// sums are what it copied. <table>_days_tokens holds a random token per
// bucket that changes in the transaction of every change to the bucket's
// rows in <table>_days: triggers on the aggregate draw a new one for
// every bucket a statement inserted, updated or deleted rows of,
// whichever client ran it, so no writer can forget to. A copy is named
// by the token its rows were read under, and a read takes it only where
// its own snapshot shows the same token and no dirty row of the
// partition. Tokens are drawn at random, not counted: a database
// restored from a backup shows the tokens of the sums it restored, never
// one a later state drew.

// dayTokensName returns the name of the tokens of t's aggregate of days.
func dayTokensName(t *series.Table) string { return t.Name + "_days_tokens" }

// tokenFunc is the schema's trigger function that draws new tokens (see
// tokenBody); its argument names the tokens relation.
const tokenFunc = "hot_days_token"

// tokenBody draws a token for each bucket of the rows a statement changed
// (its transition tables), and forgets every token on TRUNCATE.
const tokenBody = `
DECLARE
	src text;
BEGIN
	IF TG_OP = 'TRUNCATE' THEN
		EXECUTE format('DELETE FROM %s', TG_ARGV[0]);
		RETURN NULL;
	END IF;
	src := CASE TG_OP WHEN 'INSERT' THEN 'SELECT bucket FROM new_rows'
		WHEN 'DELETE' THEN 'SELECT bucket FROM old_rows'
		ELSE 'SELECT bucket FROM new_rows UNION SELECT bucket FROM old_rows' END;
	EXECUTE format('INSERT INTO %s (bucket, token) SELECT bucket, gen_random_uuid() FROM (SELECT DISTINCT bucket FROM (%s) b) b
		ON CONFLICT (bucket) DO UPDATE SET token = EXCLUDED.token', TG_ARGV[0], src);
	RETURN NULL;
END
`

// tokenEvents are the events of the aggregate of days whose triggers draw
// tokens, with the transition tables each passes on.
var tokenEvents = []struct{ name, event, referencing string }{
	{"insert", "INSERT", ` REFERENCING NEW TABLE AS new_rows`},
	{"update", "UPDATE", ` REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows`},
	{"delete", "DELETE", ` REFERENCING OLD TABLE AS old_rows`},
	{"truncate", "TRUNCATE", ""},
}

// tokenTrigger returns the name of the trigger of t's aggregate of days
// that draws tokens on event (a name of tokenEvents).
func tokenTrigger(t *series.Table, event string) string { return daysName(t) + "_token_" + event }

// dayTokensDDL returns the statements that create the tokens of t's
// aggregate of days, unless they exist, and its triggers that draw them,
// anew.
func (h *Tier) dayTokensDDL(t *series.Table) []string {
	days, tokens := h.ident(daysName(t)), h.ident(dayTokensName(t))
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS ` + tokens + ` (bucket timestamptz PRIMARY KEY, token uuid NOT NULL)`,
		`COMMENT ON TABLE ` + tokens + ` IS 'MeterStore: a random token per partition of ` + daysName(t) + `, drawn anew with every change to its rows'`,
	}
	for _, e := range tokenEvents {
		name := quote(tokenTrigger(t, e.name))
		stmts = append(stmts, `DROP TRIGGER IF EXISTS `+name+` ON `+days,
			`CREATE TRIGGER `+name+` AFTER `+e.event+` ON `+days+e.referencing+
				` FOR EACH STATEMENT EXECUTE FUNCTION `+h.ident(tokenFunc)+`(`+lit(tokens)+`)`)
	}
	return stmts
}

// ensureDayTokens gives t's aggregate of days, created by a version
// without them, its tokens and their triggers in tx, and a new token for
// each bucket it has rows of. The triggers come first; creating them
// locks out the writers of the aggregate until tx commits, so no change
// escapes both.
func (h *Tier) ensureDayTokens(ctx context.Context, tx pgx.Tx, t *series.Table, l layout) error {
	if !sumsDays(l) {
		return nil
	}
	var have bool
	err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL AND (SELECT count(*) FROM pg_catalog.pg_trigger WHERE tgrelid = to_regclass($2) AND tgname LIKE $3) = $4`,
		h.ident(dayTokensName(t)), h.ident(daysName(t)), tokenTrigger(t, "%"), len(tokenEvents)).Scan(&have)
	if err != nil || have {
		return err
	}
	stmts := append(h.dayTokensDDL(t), `INSERT INTO `+h.ident(dayTokensName(t))+` (bucket, token) SELECT bucket, gen_random_uuid() FROM (SELECT DISTINCT bucket FROM `+
		h.ident(daysName(t))+`) b ON CONFLICT (bucket) DO UPDATE SET token = EXCLUDED.token`)
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("create the tokens of the day sums: %w", err)
		}
	}
	return nil
}

// forgetDayTokens deletes the tokens of the dropped buckets [from, to) of
// t, in tx, after their sums.
func (h *Tier) forgetDayTokens(ctx context.Context, tx pgx.Tx, t *series.Table, from, to time.Time) error {
	var have bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, h.ident(dayTokensName(t))).Scan(&have); err != nil || !have {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM `+h.ident(dayTokensName(t))+` WHERE bucket >= $1 AND bucket < $2`, from, to); err != nil {
		return fmt.Errorf("forget the tokens of the day sums: %w", err)
	}
	return nil
}

// A DayToken names the stored day sums of one unit of a Read (see Units)
// in the read's snapshot: all of the partition's, no series of it dirty.
// Two reads that show a unit the same token read the same sums.
type DayToken struct {
	Unit     int
	From, To time.Time // the partition's bounds; To is zero for none
	Token    string
}

// DayTokens returns the tokens of the units whose day sums from lo on are
// the stored sums of their whole partition, in the read's snapshot; none
// where the read selects market locations or OBIS codes, or its table has
// no tokens yet.
func (r *Read) DayTokens(ctx context.Context, lo time.Time) ([]DayToken, error) {
	stored, err := r.daysStored(ctx)
	if err != nil {
		return nil, classify("read", r.t.Name, err)
	}
	var out []DayToken
	for _, u := range r.cleanDays(stored, lo) {
		if tok := r.days.tokens[u]; tok != "" {
			p := r.parts[u]
			out = append(out, DayToken{Unit: u, From: p.From, To: p.To, Token: tok})
		}
	}
	return out, nil
}

// SkipDays says that the caller reads the day sums of units elsewhere:
// their cursors (ScanDays) hand over nothing. It must be called before
// the first ScanDays, and reports whether a unit of the read is left
// whose cursor may hand over sums.
func (r *Read) SkipDays(units []int) (more bool) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if r.days.skip == nil {
		r.days.skip = make([]bool, len(r.parts))
	}
	for _, u := range units {
		if u >= 0 && u < len(r.parts) {
			r.days.skip[u] = true
		}
	}
	return slices.Contains(r.days.skip, false)
}

// skipped reports whether the caller reads unit u's day sums elsewhere.
func (r *Read) skipped(u int) bool {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return r.days.skip != nil && r.days.skip[u]
}
