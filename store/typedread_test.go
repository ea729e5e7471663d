package store

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// TestTypedOracle: the typed read of a series (no SQL engine) answers
// exactly what SQL over readings answers for the same market location and
// OBIS code, in both hot layouts, across the tier boundary: versions
// archived together (marked superseded), late corrections below W (open
// files) and a shadowed one, corrections above W, substitute values, as
// of a past snapshot, as known at a time, and in each read mode; the
// latest reading and the watermark and tiers reported too.
func TestTypedOracle(t *testing.T) {
	for _, integrity := range []series.Integrity{series.IntegrityWrite, series.IntegrityStatement} {
		t.Run(integrity.String(), func(t *testing.T) {
			ctx := t.Context()
			decl := power()
			decl.Integrity = integrity
			s := newEnv(t).open(t, Options{Tables: []Table{decl}})
			if err := s.CreatePartitions(ctx, dayN(0), dayN(7)); err != nil {
				t.Fatal(err)
			}
			write := func(rs ...Reading) {
				t.Helper()
				if _, err := s.Write(ctx, "power", rs); err != nil {
					t.Fatal(err)
				}
			}
			var first []Reading
			for d := range 6 {
				for i := range 2 {
					for _, ch := range []string{"A", "B"} {
						for slot := range 8 {
							r := qh(i, d, slot, ch, 10, int64(1000*d+100*i+slot))
							if slot == 7 {
								r.Quality = metering.Substitute
							}
							first = append(first, r)
						}
					}
				}
			}
			write(first...)
			// Versions of days still hot, archived with their winners.
			for d := range 6 {
				write(qh(0, d, 1, "A", 20, 77), qh(0, d, 2, "B", 20, 78))
			}
			archive := func(now time.Time, want time.Time) int64 {
				t.Helper()
				out, err := s.Archive(ctx, "power", now)
				if err != nil || !out.Watermark.Equal(want) {
					t.Fatalf("archive at %s: %+v, %v; want W %s", now, out, err, want)
				}
				snaps, err := s.Snapshots(ctx, "power")
				if err != nil || len(snaps) == 0 {
					t.Fatal(snaps, err)
				}
				return snaps[len(snaps)-1].ID
			}
			s1 := archive(dayN(4), dayN(2))
			time.Sleep(2 * time.Millisecond)
			t1 := time.Now()
			time.Sleep(2 * time.Millisecond)
			// Late corrections below W, one shadowed by the version archived;
			// corrections above W, one shadowed, one of a day archived next.
			shadowedLow := qh(0, 1, 1, "A", 15, 55)
			shadowedLow.Quality = metering.Substitute
			write(qh(0, 1, 1, "A", 30, 11), qh(0, 1, 3, "A", 30, 12), qh(1, 0, 7, "B", 30, 13))
			write(shadowedLow)
			write(qh(0, 3, 4, "A", 30, 21), qh(0, 4, 1, "A", 15, 22), qh(0, 2, 4, "A", 30, 23), qh(0, 2, 5, "B", 30, 24))
			time.Sleep(2 * time.Millisecond)
			t2 := time.Now()
			time.Sleep(2 * time.Millisecond)
			write(qh(0, 4, 5, "A", 40, 31), qh(0, 0, 6, "B", 40, 32))
			s2 := archive(dayN(5), dayN(3))

			type read struct {
				name string
				q    SeriesQuery
			}
			reads := []read{
				{"every day", SeriesQuery{MaLo: malo(0), OBIS: "1-1:1.29.0"}},
				{"across W", SeriesQuery{MaLo: malo(0), OBIS: "1-1:1.29.0", From: dayN(1).Add(30 * time.Minute), To: dayN(4).Add(time.Hour)}},
				{"cold days", SeriesQuery{MaLo: malo(0), OBIS: "1-1:1.29.0", From: dayN(0), To: dayN(2)}},
				{"a hot day", SeriesQuery{MaLo: malo(0), OBIS: "1-1:1.29.0", From: dayN(4), To: dayN(5)}},
				{"channel B of meter 1", SeriesQuery{MaLo: malo(1), OBIS: "1-1:1.29.0", Identity: map[string]string{"channel": "B"}}},
				{"substitutes", SeriesQuery{MaLo: malo(0), OBIS: "1-1:1.29.0", Qualities: []metering.Quality{metering.Substitute}}},
				{"no such meter", SeriesQuery{MaLo: malo(5), OBIS: "1-1:1.29.0"}},
			}
			opts := []struct {
				name string
				o    ReadOptions
			}{
				{"current", ReadOptions{}},
				{"known at t1", ReadOptions{KnownAt: t1}},
				{"known at t2", ReadOptions{KnownAt: t2}},
				{"as of s1", ReadOptions{AsOfSnapshot: s1}},
				{"as of s2 known at t1", ReadOptions{AsOfSnapshot: s2, KnownAt: t1}},
				{"as of t2", ReadOptions{AsOf: t2}},
				{"historical", ReadOptions{Mode: ReadHistorical}},
				{"historical known at t1", ReadOptions{Mode: ReadHistorical, KnownAt: t1}},
				{"operational", ReadOptions{Mode: ReadOperational}},
				{"operational known at t2", ReadOptions{Mode: ReadOperational, KnownAt: t2}},
			}
			compared, differ := 0, 0
			for _, o := range opts {
				for _, r := range reads {
					q := r.q
					q.Read = o.o
					what := o.name + ", " + r.name
					got, err := s.SeriesRead(ctx, "power", q)
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					want, hdr := sqlSeries(t, s, q, false)
					if g, w := typedLines(got.Readings), want; !slices.Equal(g, w) {
						t.Errorf("%s: the typed read differs from readings: %s", what, firstDiff(g, w))
						differ++
					}
					if !slices.Equal(got.Read.Tiers, hdr.Tiers) || !got.Read.Watermark.Equal(hdr.Watermark) || got.Read.Snapshot != hdr.Snapshot {
						t.Errorf("%s: read tiers %v, W %s, snapshot %d; SQL %v, %s, %d", what, got.Read.Tiers, got.Read.Watermark,
							got.Read.Snapshot, hdr.Tiers, hdr.Watermark, hdr.Snapshot)
					}
					latest, ok, err := s.LatestReading(ctx, "power", q)
					if err != nil {
						t.Fatalf("%s: latest: %v", what, err)
					}
					wantLatest, _ := sqlSeries(t, s, q, true)
					var gotLatest []string
					if ok {
						gotLatest = typedLines([]Reading{latest})
					}
					if !slices.Equal(gotLatest, wantLatest) {
						t.Errorf("%s: latest %v, SQL %v", what, gotLatest, wantLatest)
					}
					compared += len(want)
				}
			}
			if compared < 500 {
				t.Fatalf("the oracle compared only %d readings", compared)
			}
			t.Logf("%d readings compared in %d reads", compared, len(opts)*len(reads))
		})
	}
}

// sqlSeries returns the lines of what SQL over readings answers for q,
// by from and channel (with latest, only the last), and its header.
func sqlSeries(t *testing.T, s *Store, q SeriesQuery, latest bool) ([]string, *ResultHeader) {
	t.Helper()
	params := []any{q.MaLo, "1-1:1.29.0"}
	where := []string{"malo_id = $1", "obis_code = $2"}
	arg := func(cond string, v any) {
		params = append(params, v)
		where = append(where, fmt.Sprintf(cond, len(params)))
	}
	if !q.From.IsZero() {
		arg(`"from" >= $%d`, q.From)
	}
	if !q.To.IsZero() {
		arg(`"from" < $%d`, q.To)
	}
	for k, v := range q.Identity {
		arg(quoteIdent(k)+` = $%d`, v)
	}
	if len(q.Qualities) > 0 {
		qs := make([]string, len(q.Qualities))
		for i, ql := range q.Qualities {
			qs[i] = "'" + ql.String() + "'"
		}
		where = append(where, "quality IN ("+strings.Join(qs, ", ")+")")
	}
	order := ` ORDER BY "from", channel`
	if latest {
		order = ` ORDER BY "from" DESC, channel DESC LIMIT 1`
	}
	sql := `SELECT "from", "to", CAST(value * 1000000 AS BIGINT), CAST(version AS UBIGINT), quality, recorded_at, channel,
		version_scope, unit, balancing_day, resolution FROM readings WHERE ` + strings.Join(where, " AND ") + order
	st, err := s.Prepare(t.Context(), sql, StatementOptions{Table: "power", Read: q.Read, Params: params})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	res, err := st.Query(t.Context())
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var out []string
	for _, r := range res.Rows {
		out = append(out, fmt.Sprintf("%s %s %d v%d q%s rec %s %s %s %s %s %s",
			r[0].(time.Time).UTC().Format(time.RFC3339), r[1].(time.Time).UTC().Format(time.RFC3339), r[2], r[3], r[4],
			r[5].(time.Time).UTC().Format(time.RFC3339Nano), r[6], r[7], r[8], r[9].(time.Time).Format(time.DateOnly), r[10]))
	}
	return out, &res.ResultHeader
}

// typedLines returns the lines sqlSeries makes of rs.
func typedLines(rs []Reading) []string {
	var out []string
	for _, r := range rs {
		out = append(out, fmt.Sprintf("%s %s %d v%d q%s rec %s %s %s %s %s %s",
			r.From.UTC().Format(time.RFC3339), r.To.UTC().Format(time.RFC3339), int64(r.Value), r.Version, r.Quality,
			r.RecordedAt.UTC().Format(time.RFC3339Nano), r.Extra["channel"], r.VersionScope, r.Unit, r.BalancingDay, r.Resolution))
	}
	return out
}

// quoteIdent quotes an identifier for DuckDB.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
