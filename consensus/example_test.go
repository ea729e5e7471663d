package consensus_test

import (
	"context"
	"fmt"
	"log"
	"strconv"

	"github.com/meterstore/meterstore/consensus"
)

// The compare-and-set loop every writer of a shard runs: read the head,
// derive the next version from it, and append at head+1; when another
// writer appended first, the append is refused and the loop reads again.
func Example_compareAndSet() {
	ctx := context.Background()
	var l consensus.Log = consensus.NewMemory()
	// increment adds one to the counter; meanwhile, if set, runs between
	// the first read and its append, as another writer would.
	increment := func(meanwhile func()) (attempts int) {
		for {
			attempts++
			head, ok, err := l.Head(ctx, "counter")
			if err != nil {
				log.Fatal(err)
			}
			expected, n := consensus.Empty, 0
			if ok {
				expected = head.SeqNo
				n, _ = strconv.Atoi(string(head.Data))
			}
			if meanwhile != nil {
				meanwhile()
				meanwhile = nil
			}
			res, err := l.CompareAndSet(ctx, "counter", expected, []byte(strconv.Itoa(n+1)))
			if err != nil {
				log.Fatal(err)
			}
			if res == consensus.Committed {
				return attempts
			}
		}
	}
	fmt.Println("attempts:", increment(nil))
	// Another writer increments after this one read the head: its first
	// append is refused, and the second, on the new head, goes through.
	fmt.Println("attempts:", increment(func() { increment(nil) }))
	head, _, _ := l.Head(ctx, "counter")
	fmt.Printf("seqno %d: %s\n", head.SeqNo, head.Data)
	// Output:
	// attempts: 1
	// attempts: 2
	// seqno 2: 3
}
