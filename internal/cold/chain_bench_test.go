package cold

import (
	"testing"
	"time"

	"github.com/meterstore/meterstore/series"
)

// BenchmarkChainProof measures what a read pays for the proof of a
// snapshot's chain: "proof" reads and hashes the metadata's digest index,
// manifest list and every manifest of a table of 60 daily archivals (as
// the first read of each snapshot does, and a read after chainMaxAge);
// "plan" is a read's plan once the proof is kept (every other read).
//
//	go test -run '^$' -bench ChainProof ./internal/cold
func BenchmarkChainProof(b *testing.B) {
	e := newEnv(b, Options{})
	h := e.ensure(b, loadProfile("power"))
	day := jan2026
	for range 60 {
		next := day.AddDate(0, 0, 1)
		if _, err := e.tier.Archive(b.Context(), h, next, day, next, Readings(quarterHours(0, day, 96))); err != nil {
			b.Fatal(err)
		}
		day = next
	}
	ice, err := e.tier.Iceberg(b.Context(), h)
	if err != nil {
		b.Fatal(err)
	}
	fsys, err := ice.FS(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	snap := ice.CurrentSnapshot()
	b.Run("proof", func(b *testing.B) {
		for b.Loop() {
			ch, err := readChain(b.Context(), fsys, "power", ice.Metadata(), snap, nil)
			if err != nil || len(ch.files) != 60 {
				b.Fatalf("%d files, %v", len(ch.files), err)
			}
		}
	})
	q := series.Range{From: jan2026.AddDate(0, 0, 10), To: jan2026.AddDate(0, 0, 11)}
	b.Run("plan", func(b *testing.B) {
		for b.Loop() {
			// A range of its own each time: the plan, not the plan cache.
			q.To = q.To.Add(time.Microsecond)
			p, err := e.tier.Plan(b.Context(), h, q)
			if err != nil || len(p.Files) == 0 {
				b.Fatalf("%+v, %v", p, err)
			}
		}
	})
}
