package cold

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

func TestExpireSnapshots(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	var all []series.Reading
	var snaps []int64
	for m := range 4 {
		from := jan2026.AddDate(0, m, 0)
		rows := quarterHours(m, from, 8)
		all = append(all, rows...)
		snaps = append(snaps, e.archive(t, h, from, from.AddDate(0, 1, 0), rows).SnapshotID)
	}
	w := jan2026.AddDate(0, 4, 0)
	e.foreignAppend(t, h)
	// A foreign tool tags the first snapshot and asks, through table
	// properties, for five days of history and one snapshot.
	tag := snaps[0]
	_, _, err := e.foreign.CommitTable(t.Context(), h.Identifier(), nil, []table.Update{
		table.NewSetSnapshotRefUpdate("settlement-2026-01", tag, table.TagRef, 0, 0, 0),
		table.NewSetPropertiesUpdate(iceberg.Properties{table.MaxSnapshotAgeMsKey: "1", table.MinSnapshotsToKeepKey: "1"}),
	})
	if err != nil {
		t.Fatal(err)
	}

	// Within the retention nothing goes, whatever the table says; the
	// watermark is re-stamped onto the foreign snapshot first.
	now := time.Now()
	x, err := e.tier.ExpireSnapshots(t.Context(), h, now, Retention{})
	if err != nil {
		t.Fatal(err)
	}
	if !x.Restamped || len(x.Expired) != 0 || x.Kept != 6 {
		t.Fatalf("expiry within the retention: %+v", x)
	}
	if e.summary(t, h)[SummaryWatermark] != FormatTime(w) {
		t.Fatal("the watermark was not re-stamped")
	}

	// Eleven years on, the newest two stay, and so does the tagged one.
	x, err = e.tier.ExpireSnapshots(t.Context(), h, now.AddDate(11, 0, 0), Retention{KeepLast: 2})
	if err != nil {
		t.Fatal(err)
	}
	ice, err := e.tier.Iceberg(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	var left []int64
	for _, s := range ice.Metadata().Snapshots() {
		left = append(left, s.SnapshotID)
	}
	if x.Restamped || len(x.Expired) != 3 || x.Kept != 3 || len(left) != 3 || !slices.Contains(left, tag) {
		t.Fatalf("expiry after eleven years: %+v, left %v (tag %d)", x, left, tag)
	}
	for _, id := range x.Expired {
		if slices.Contains(left, id) {
			t.Fatalf("snapshot %d reported expired is still there", id)
		}
	}
	if got, ok, err := e.tier.Watermark(t.Context(), h); err != nil || !ok || !got.Equal(w) {
		t.Fatalf("watermark after expiry: %v %v %v", got, ok, err)
	}
	sameReadings(t, tab, collect(t, e.tier.Scan(t.Context(), h, series.Range{})), all)

	// MaxAge instead of calendar years; the current snapshot always stays.
	x, err = e.tier.ExpireSnapshots(t.Context(), h, now.Add(time.Hour), Retention{MaxAge: time.Minute, KeepLast: 1})
	if err != nil || len(x.Expired) != 1 || x.Kept != 2 {
		t.Fatalf("expiry with a one-minute retention: %+v, %v", x, err)
	}
}

func TestPurge(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	other := e.ensure(t, loadProfile("other"))
	e.archive(t, h, jan2026, feb2026, quarterHours(0, jan2026, 8))
	e.archive(t, other, jan2026, feb2026, quarterHours(1, jan2026, 8))
	otherFiles := e.files(t, ".parquet")

	for _, confirm := range []string{"", "Power", "other"} {
		if _, err := e.tier.Purge(t.Context(), "power", confirm); !errors.Is(err, series.ErrNotConfirmed) {
			t.Fatalf("purge confirmed with %q: %v", confirm, err)
		}
	}
	if n := len(collect(t, e.tier.Scan(t.Context(), h, series.Range{}))); n != 8 {
		t.Fatalf("an unconfirmed purge left %d readings", n)
	}

	n, err := e.tier.Purge(t.Context(), "power", "power")
	if err != nil || n == 0 {
		t.Fatalf("purge: %d files, %v", n, err)
	}
	if _, err := e.cat.LoadTable(t.Context(), h.Identifier()); !errors.Is(err, icecatalog.ErrNoSuchTable) {
		t.Fatalf("the purged table loads: %v", err)
	}
	for _, f := range e.files(t, "") {
		if len(f) > len("meterstore/power/") && f[:len("meterstore/power/")] == "meterstore/power/" {
			t.Fatalf("the purged table left %s", f)
		}
	}
	// The other table is untouched.
	if n := len(collect(t, e.tier.Scan(t.Context(), other, series.Range{}))); n != 8 {
		t.Fatalf("purging one table left %d readings in another", n)
	}
	otherFiles = slices.DeleteFunc(otherFiles, func(f string) bool { return f[:len("meterstore/other/")] != "meterstore/other/" })
	for _, f := range otherFiles {
		if !slices.Contains(e.files(t, ".parquet"), f) {
			t.Fatalf("purging power deleted %s", f)
		}
	}
	// The name can be declared again, empty.
	h = e.ensure(t, tab)
	if n := len(collect(t, e.tier.Scan(t.Context(), h, series.Range{}))); n != 0 {
		t.Fatalf("a re-created table has %d readings", n)
	}
}
