package query

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// The relation daily of an interval table: per series and balancing day,
// what GROUP BY over readings gives, so with versions resolved and with
// as of, known_at and the read mode applied exactly as for readings:
//
//	malo_id, obis_code, <identity columns>   the series
//	balancing_day DATE                       the local day, the gas day for GAS
//	sparte, resolution, unit                 of the day's intervals
//	from, to TIMESTAMPTZ                     where the day begins and ends
//	expected BIGINT                          92, 96 or 100 quarter hours; 23, 24 or 25 hours; 1 for P1D;
//	                                         NULL for a resolution coarser than a day
//	present BIGINT                           the day's intervals (resolved readings)
//	value_sum DECIMAL(38,6)                  the sum of their values
//	quality_<code> BIGINT                    how many have that quality, one column per MSCONS code
//	                                         (quality_220, quality_67, ..., quality_z18)
//	max_version DECIMAL(20,0)                the highest version among them
//	max_recorded_at TIMESTAMPTZ              the latest recorded_at among them
//
// A series has one row a day, or one for each sparte, resolution and unit
// it delivered that day, so that no sum adds values of different units.
// The relation is computed from readings, so it is exact by construction
// whatever the statement reads as of or as known at; days are bounded by
// a statement's top-level conjuncts on balancing_day (and malo_id) when
// it reads daily once and nothing else of its table.

func isDaily(name string) bool { return strings.EqualFold(name, "daily") }

// dailyRange bounds a statement that reads the relation daily once and
// no other relation of its table: a.Range by the readings of the days its
// constraints on balancing_day select, and a.MaLo by its constraint on
// malo_id.
func (a *analysis) dailyRange(ctx context.Context, q querier, node map[string]any, self string) error {
	cs, malo := constraintsOn(node, isDaily, "balancing_day", self)
	a.MaLo = malo
	if len(cs) == 0 {
		return nil
	}
	d, err := evaluateDays(ctx, q, cs)
	if err != nil {
		return err
	}
	if calendarErr != nil {
		return fmt.Errorf("query: %w", calendarErr)
	}
	switch {
	case d.hasLo && d.hasHi && d.lo.Compare(d.hi) > 0:
		a.Range.From, a.Range.To = epoch, epoch
		return nil
	case d.hasLo:
		// Midnight begins a balancing day of every commodity no later than 06:00.
		a.Range.From = calendar.DayStart(d.lo)
	}
	if d.hasHi {
		a.Range.To = calendar.GasDayEnd(d.hi)
	}
	return nil
}

// createDaily creates the view daily in p's schema over its readings, if
// the table is an interval table.
func createDaily(ctx context.Context, conn *sql.Conn, t *series.Table, l layout, p place) error {
	if t.TimeModel != series.Interval {
		return nil
	}
	if _, err := conn.ExecContext(ctx, `CREATE VIEW `+database+`.`+rel(p.out, "daily")+` AS `+dailySQL(l, rel(p.out, "readings"))); err != nil {
		return fmt.Errorf("query: create the view daily: %w", err)
	}
	return nil
}

// dailyQualities are the quality codes daily counts, one column each.
var dailyQualities = metering.Qualities()

// dailyQualityColumn returns the name of daily's column counting the
// intervals of quality q, such as quality_220.
func dailyQualityColumn(q metering.Quality) string { return "quality_" + strings.ToLower(q.String()) }

// dailySQL returns the SELECT of the relation daily over the resolved
// readings of the relation readings; see the comment at the top of this
// file.
func dailySQL(l layout, readings string) string {
	var keys []string
	for _, k := range l.key {
		if k != "from" {
			keys = append(keys, ident(k))
		}
	}
	group := strings.Join(keys, ", ") + `, balancing_day, sparte, resolution, unit`
	var counted []string
	for _, r := range countedResolutions {
		counted = append(counted, quote(r.String()))
	}
	aggs := []string{
		`count(*) AS present`,
		`CAST(sum(value) AS DECIMAL(38,6)) AS value_sum`,
	}
	for _, q := range dailyQualities {
		aggs = append(aggs, `count(*) FILTER (WHERE quality = `+quote(q.String())+`) AS `+ident(dailyQualityColumn(q)))
	}
	aggs = append(aggs, `max(version) AS max_version`, `max(recorded_at) AS max_recorded_at`)
	var qcols []string
	for _, q := range dailyQualities {
		qcols = append(qcols, ident(dailyQualityColumn(q)))
	}
	return `SELECT ` + group + `,
	meter_balancing_day_start(balancing_day, sparte) AS "from",
	meter_balancing_day_end(balancing_day, sparte) AS "to",
	CAST(CASE WHEN resolution IN (` + strings.Join(counted, ", ") + `) THEN meter_expected_intervals(balancing_day, resolution, sparte) END AS BIGINT) AS expected,
	present, value_sum, ` + strings.Join(qcols, ", ") + `, max_version, max_recorded_at
FROM (SELECT ` + group + `, ` + strings.Join(aggs, ", ") + `
	FROM ` + database + `.` + readings + `
	GROUP BY ` + group + `)`
}
