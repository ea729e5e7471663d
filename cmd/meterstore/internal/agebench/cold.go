package agebench

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// archivedDay0 is the first day an archived table holds.
var archivedDay0 = time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC)

// ageArchived creates the table bench.aged as the cold tier does and gives
// it commits archivals of one daily window each, four quarter hours of one
// market location: a data file and a manifest per commit, as daily
// archival makes them. It returns the table and its compaction.
func ageArchived(ctx context.Context, cat icecatalog.Catalog, commits int, log *slog.Logger) (*table.Table, func(context.Context) (cold.Compaction, error), error) {
	tier, err := cold.New(cat, cold.Options{Namespace: "bench", Logger: log})
	if err != nil {
		return nil, nil, err
	}
	decl := &series.Table{
		Name: "aged", TimeModel: series.Interval, Commodity: metering.Electricity,
		Resolutions: []metering.Resolution{metering.QuarterHour},
		Width:       series.Daily, Headroom: 2 * 24 * time.Hour,
	}
	h, err := tier.Ensure(ctx, decl)
	if err != nil {
		return nil, nil, err
	}
	cal, err := metering.NewCalendar()
	if err != nil {
		return nil, nil, err
	}
	m, err := metering.MaLoFromPrefix("5100000000")
	if err != nil {
		return nil, nil, err
	}
	for d := range commits {
		from := archivedDay0.AddDate(0, 0, d)
		to := from.AddDate(0, 0, 1)
		rows := make([]series.Reading, 4)
		for q := range rows {
			at := from.Add(time.Duration(q) * 15 * time.Minute)
			rows[q] = series.Reading{
				MaLo: m.String(), OBIS: "1-1:1.29.0", From: at, To: at.Add(15 * time.Minute),
				Value: series.Decimal(int64(d*4+q) * 1000), Unit: metering.KilowattHour,
				Quality: metering.TrueValue, Resolution: metering.QuarterHour,
				Version: 20160101000000, VersionScope: "9900000000003:" + at.Format("2006-01"),
				RecordedAt: to, BalancingDay: cal.BalancingDay(at, metering.Electricity),
			}
		}
		if _, err := tier.Archive(ctx, h, to, from, to, cold.Readings(rows)); err != nil {
			return nil, nil, fmt.Errorf("archive day %d: %w", d, err)
		}
	}
	ice, err := tier.Iceberg(ctx, h)
	if err != nil {
		return nil, nil, err
	}
	return ice, func(ctx context.Context) (cold.Compaction, error) { return tier.Compact(ctx, h, cold.CompactOptions{}) }, nil
}
