package cold

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/meterstore/meterstore/blob"
	"github.com/meterstore/meterstore/series"
)

// keys returns the keys under prefix in b.
func keys(t *testing.T, b *blob.Bucket, prefix string) []string {
	t.Helper()
	var out []string
	opts := blob.ListOptions{}
	for range 1000 {
		page, err := b.List(t.Context(), prefix, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Objects {
			out = append(out, o.Key)
		}
		if page.Next == "" {
			break
		}
		opts.StartAfter = page.Next
	}
	return out
}

// TestOrphansAndPurgeOnS3: on an S3 warehouse, where listings and
// manifests spell locations as s3:// URIs, cleanup finds exactly the
// manifest lists and digest indexes expiry left and a planted failed
// write, keeps everything while the safety line is behind them, deletes
// them once it is past, and
// the table reads the same; a purge cut short then run again leaves no
// object under the table's location.
func TestOrphansAndPurgeOnS3(t *testing.T) {
	e := newS3Env(t)
	tier, wh, cat := e.tier, e.wh, e.cat
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	var rows []series.Reading
	for m := range 3 {
		from := jan2026.AddDate(0, m, 0)
		r := quarterHours(m, from, 8)
		rows = append(rows, r...)
		e.archive(t, h, from, from.AddDate(0, 1, 0), r)
	}
	x, err := tier.ExpireSnapshots(t.Context(), h, time.Now().AddDate(11, 0, 0), Retention{KeepLast: 1})
	if err != nil || len(x.Expired) != 2 {
		t.Fatalf("expiry: %+v, %v", x, err)
	}
	const loc = "meterstore/power/"
	var data string
	for _, k := range keys(t, wh.Bucket, loc) {
		if strings.HasSuffix(k, ".parquet") {
			data = k
			break
		}
	}
	b, err := wh.Bucket.Get(t.Context(), data)
	if err != nil {
		t.Fatal(err)
	}
	failed := loc + "data/00000-9-failed.parquet"
	if err := wh.Bucket.PutIfAbsent(t.Context(), failed, b); err != nil {
		t.Fatal(err)
	}
	all := keys(t, wh.Bucket, loc)

	rep, err := tier.Orphans(t.Context(), h, OrphanOptions{Before: time.Now().Add(-time.Hour), Delete: true})
	if err != nil || len(rep.Orphans) != 0 || rep.Young != 5 {
		t.Fatalf("with the line behind every file: %d orphans, %d young, %v", len(rep.Orphans), rep.Young, err)
	}
	if got := keys(t, wh.Bucket, loc); !slices.Equal(got, all) {
		t.Fatal("files newer than the line were deleted")
	}
	rep, err = tier.Orphans(t.Context(), h, OrphanOptions{Before: time.Now().Add(time.Hour), Delete: true})
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, o := range rep.Orphans {
		if !strings.HasPrefix(o.Location, "s3://") {
			t.Errorf("orphan %s is no s3:// location", o.Location)
		}
		found = append(found, o.Location[strings.Index(o.Location, loc):])
	}
	lists, digests := 0, 0
	for _, f := range found {
		switch {
		case strings.Contains(f, "/metadata/snap-"):
			lists++
		case strings.Contains(f, "/digests-"):
			digests++
		}
	}
	if rep.Deleted != 5 || !slices.Contains(found, failed) || lists != 2 || digests != 2 {
		t.Fatalf("orphans %v, %d deleted; want the failed write, 2 manifest lists and the 2 digest indexes they named", found, rep.Deleted)
	}
	sameReadings(t, tab, collect(t, tier.Scan(t.Context(), h, series.Range{})), rows)
	left := keys(t, wh.Bucket, loc)
	for _, k := range referencedBy(t, e, h) {
		k = k[strings.Index(k, loc):]
		if !slices.Contains(left, k) {
			t.Errorf("referenced %s was deleted", k)
		}
	}

	calls := 0
	tier.purgeStep = func(string) error {
		if calls++; calls > 4 {
			return errCutShort
		}
		return nil
	}
	if _, err := tier.Purge(t.Context(), "power", "power"); !errors.Is(err, errCutShort) {
		t.Fatalf("cut purge: %v", err)
	}
	tier.purgeStep = nil
	if _, err := tier.Purge(t.Context(), "power", "power"); err != nil {
		t.Fatalf("rerun: %v", err)
	}
	if left := keys(t, wh.Bucket, loc); len(left) > 0 {
		t.Fatalf("the purge left %v", left)
	}
	if _, err := cat.LoadTable(t.Context(), h.Identifier()); !errors.Is(err, icecatalog.ErrNoSuchTable) {
		t.Fatalf("the purged table loads: %v", err)
	}
}
