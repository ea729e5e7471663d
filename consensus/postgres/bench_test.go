package postgres

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/meterstore/meterstore/consensus"
	"github.com/meterstore/meterstore/internal/pgtest"
)

// BenchmarkCompareAndSet measures parallel CaS appends, each goroutine on
// shards of its own, under both isolation levels on the same server. The
// ratio between the two is what to read; `meterstore bench consensus`
// measures the open-loop behaviour under overload.
func BenchmarkCompareAndSet(b *testing.B) {
	url := pgtest.NewDB(b)
	payload := make([]byte, 1024)
	for _, iso := range []Isolation{ReadCommitted, Serializable} {
		l := open(b, url, Options{Table: "bench_" + string(iso), Isolation: iso})
		// The function below runs once per b.N tried; worker ids keep
		// counting so that every run writes fresh shards.
		var worker atomic.Int64
		b.Run(string(iso), func(b *testing.B) {
			var retried atomic.Int64
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				w := worker.Add(1)
				heads := map[int]int64{}
				for i := 0; pb.Next(); i++ {
					s := i % 64
					shard := fmt.Sprintf("w%d-%d", w, s)
					exp, ok := heads[s]
					if !ok {
						exp = consensus.Empty
					}
					res, err := l.CompareAndSet(b.Context(), shard, exp, payload)
					switch {
					case consensus.IsRetryable(err):
						retried.Add(1)
						continue
					case err != nil:
						b.Error(err)
						return
					case res != consensus.Committed:
						b.Errorf("%s: mismatch at %d on a shard of our own", shard, exp)
						return
					}
					heads[s] = exp + 1
				}
			})
			b.ReportMetric(float64(retried.Load())/float64(b.N), "retried/op")
		})
	}
}
