package ingest

import "sync"

// batchPool holds the two batch buffers of finished runs, so that a
// server's requests one after another decode into memory already grown
// rather than allocating, zeroing and collecting a batch's readings each
// time. Only buffers of at most DefaultBatchRows readings are kept: a run
// with a larger batch size takes its own and lets them go.
var batchPool = sync.Pool{New: func() any { return new([2]decoded) }}

// takeBatches returns the buffers for a run of batches of n rows.
func takeBatches(n int) *[2]decoded {
	if n > DefaultBatchRows {
		return new([2]decoded)
	}
	return batchPool.Get().(*[2]decoded)
}

// giveBatches returns a run's buffers to the pool, emptied: the readings
// they held are the run's caller's, and a later run must neither see them
// nor keep their strings alive.
func giveBatches(bufs *[2]decoded) {
	for i := range bufs {
		b := &bufs[i]
		if cap(b.rows) > DefaultBatchRows {
			return
		}
		clear(b.rows[:cap(b.rows)])
		b.lines, b.rows, b.bad, b.err = b.lines[:0], b.rows[:0], nil, nil
	}
	batchPool.Put(bufs)
}
