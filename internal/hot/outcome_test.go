package hot

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/meterstore/meterstore/series"
)

// outcomeVariants are the integrity variants the outcome tests run on:
// each takes another path to the stored rows (constraints and the fast
// path, the dictionary layouts, the check under partition locks).
var outcomeVariants = []variant{
	{"exclusion", series.IntegrityExclusion, false, nil},
	{"step", series.IntegrityStatement, false, nil},
	{"lean", series.IntegrityStatement, false, layoutLean},
	{"dictionary", series.IntegrityStatement, false, layoutDictionary},
	{"write", series.IntegrityWrite, false, nil},
}

// slots returns quarter hours of meter i at the slots given, under
// version, with values derived from the version.
func slots(i int, version uint64, ns ...int) []series.Reading {
	out := make([]series.Reading, len(ns))
	for k, n := range ns {
		out[k] = qh(i, n, series.Decimal(int64(version%1000)*1000+int64(n)), version)
	}
	return out
}

func wantStatuses(t *testing.T, res series.Result, want ...series.Status) {
	t.Helper()
	if fmt.Sprint(res.Status) != fmt.Sprint(want) {
		t.Fatalf("statuses %v, want %v", res.Status, want)
	}
	c := series.Tally(slices.Clone(want))
	if res.Inserted != c.Inserted || res.Present != c.Present || res.Superseded != c.Superseded ||
		res.Shadowed != c.Shadowed || res.Refused != c.Refused {
		t.Fatalf("counts %+v, want %+v", res, c)
	}
}

// TestWriteOutcomes produces every outcome of a successful write, in
// separate batches and mixed in one, on each integrity variant.
func TestWriteOutcomes(t *testing.T) {
	const (
		I  = series.Inserted
		P  = series.Present
		SU = series.Superseded
		SH = series.Shadowed
	)
	for _, v := range outcomeVariants {
		t.Run(v.name, func(t *testing.T) {
			h, _ := newTier(t, Options{})
			tab := lastgang("outcomes")
			declareVariant(t, h, tab, v)
			wantStatuses(t, mustWrite(t, h, tab, slots(0, 10, 0, 1, 2)), I, I, I)
			wantStatuses(t, mustWrite(t, h, tab, slots(0, 10, 0, 1, 2)), P, P, P)
			wantStatuses(t, mustWrite(t, h, tab, slots(0, 20, 0, 1)), SU, SU)
			wantStatuses(t, mustWrite(t, h, tab, slots(0, 15, 0, 1, 2)), SH, SH, SU)
			// One batch: a new meter, a correction, a redelivery, a late
			// version, and two versions of one new reading in either order.
			var mixed []series.Reading
			mixed = append(mixed, slots(1, 10, 0)...)
			mixed = append(mixed, slots(0, 30, 0)...)
			mixed = append(mixed, slots(0, 20, 1)...)
			mixed = append(mixed, slots(0, 12, 2)...)
			mixed = append(mixed, slots(2, 40, 5)...)
			mixed = append(mixed, slots(2, 35, 5)...)
			mixed = append(mixed, slots(3, 35, 5)...)
			mixed = append(mixed, slots(3, 40, 5)...)
			wantStatuses(t, mustWrite(t, h, tab, mixed), I, SU, P, SH, I, SH, I, SU)

			// A restatement under a stored version refuses the batch.
			bad := append(slots(4, 10, 0), slots(0, 10, 0)...)
			bad[1].Value += 1
			_, err := h.Write(context.Background(), tab, bad)
			wantError(t, err, series.IntegrityViolation, 1)
			if got := len(scanAll(t, h, tab)); got != 3+2+3+7 {
				t.Fatalf("%d rows stored after the refused batch, want %d", got, 15)
			}
		})
	}
}

// TestWriteOutcomesConcurrent has writers deliver versions of the same
// readings at once. Every reading gets exactly one outcome, each merge key
// exactly one Inserted, its highest version is never Shadowed, and the
// stored winners are those of the same batches written one after the
// other.
func TestWriteOutcomesConcurrent(t *testing.T) {
	const (
		writers = 4
		rounds  = 6
		meters  = 3
		nslots  = 8
	)
	for _, v := range outcomeVariants {
		t.Run(v.name, func(t *testing.T) {
			h, _ := newTier(t, Options{})
			tab := lastgang("race")
			declareVariant(t, h, tab, v)
			seq := lastgang("sequential")
			declareVariant(t, h, seq, v)

			// Batch (w, r) carries version r*writers+w+1, shuffled so
			// that versions do not arrive in order.
			rng := rand.New(rand.NewPCG(uint64(len(v.name)), 7))
			versions := rng.Perm(writers * rounds)
			batches := make([][][]series.Reading, writers)
			for w := range writers {
				for r := range rounds {
					ver := uint64(versions[r*writers+w] + 1)
					var b []series.Reading
					for m := range meters {
						b = append(b, slots(m, ver, rng.Perm(nslots)[:nslots/2+1]...)...)
					}
					slices.SortFunc(b, func(x, y series.Reading) int {
						return tab.CompareSeries(&x, &y)*2 + x.From.Compare(y.From)
					})
					batches[w] = append(batches[w], b)
				}
			}

			type outcome struct {
				version uint64
				status  series.Status
			}
			var mu sync.Mutex
			byKey := map[string][]outcome{}
			var total series.Result
			sent := 0
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for w := range writers {
				for _, b := range batches[w] {
					sent += len(b)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for _, b := range batches[w] {
						res, err := h.Write(context.Background(), tab, b)
						if err != nil {
							errs <- err
							return
						}
						mu.Lock()
						total.Add(res)
						for i, s := range res.Status {
							k := b[i].MaLo + b[i].From.String()
							byKey[k] = append(byKey[k], outcome{b[i].Version, s})
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if n := total.Inserted + total.Superseded + total.Shadowed + total.Present + total.Refused; n != sent || total.Present != 0 || total.Refused != 0 {
				t.Fatalf("outcomes %+v add up to %d, sent %d", total, n, sent)
			}
			for k, os := range byKey {
				ins, top := 0, outcome{}
				for _, o := range os {
					if o.status == series.Inserted {
						ins++
					}
					if o.version > top.version {
						top = o
					}
				}
				if ins != 1 || top.status == series.Shadowed {
					t.Fatalf("reading %s: outcomes %v: want one inserted and the highest version not shadowed", k, os)
				}
			}

			for w := range writers {
				for _, b := range batches[w] {
					mustWrite(t, h, seq, b)
				}
			}
			if got, want := winners(scanAll(t, h, tab)), winners(scanAll(t, h, seq)); !slices.Equal(got, want) {
				t.Fatalf("winners after concurrent writes differ from the sequential ones:\n%v\n%v", got, want)
			}
		})
	}
}

// winners returns the highest version of each reading of rs, as text.
func winners(rs []series.Reading) []string {
	top := map[string]series.Reading{}
	for _, r := range rs {
		k := r.MaLo + " " + r.From.String()
		if w, ok := top[k]; !ok || r.Version > w.Version {
			top[k] = r
		}
	}
	var out []string
	for k, r := range top {
		out = append(out, fmt.Sprintf("%s v%d %v", k, r.Version, r.Value))
	}
	slices.Sort(out)
	return out
}
