package hot

import (
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/meterstore/meterstore/internal/hot/pgnum"
	"github.com/meterstore/meterstore/series"
)

// A staged row is a Reading checked and converted to what the staging
// table receives, plus what the integrity checks need to know about it.
type staged struct {
	src   *series.Reading
	row   int32 // index in the batch
	probe bool  // checked against stored rows before the insert
	// shared says another row of the batch has the row's merge key
	// (series.Batch.Shared).
	shared bool
	// lower and higher report other versions of the merge key stored
	// before the write (others); top is the highest of them, topScope
	// its version scope.
	lower, higher bool
	top           uint64
	topScope      string
	sparte        string
	unit          string
	quality       string
	resolution    string
	from, to      time.Time
	value         pgnum.Micro
	version       pgnum.Uint
	day           time.Time // balancing day, midnight UTC, sent as a date
	melo          *string   // nil is NULL
	subject       *string
	extra         []any // per declared column: *string, *int64 or nil
	// series and attr are the ids of the row's dictionary rows, in a
	// table of the dictionary layout (resolveIDs).
	series, attr int32
	// newSeries says this write's transaction inserted the series
	// dictionary row: no other rows of the series are stored.
	newSeries bool
	// anc holds the starts of the coarser accepted intervals containing
	// this one: the only places a containing row of the series can start.
	anc []time.Time
}

// A batch is a validated batch ready to be staged.
type batch struct {
	rows   []staged // rows to stage: first occurrences, in batch order
	status []series.Status
	// substitute has every row given the next version of its merge key
	// before it is stored (WriteOptions.Substitute).
	substitute bool
	// enc holds the rows encoded for the direct copy, if they were
	// encoded ahead (copybin.go); else encoding delivers them once the
	// goroutine encoding them during the write's first round trips has.
	enc      *encoded
	encoding <-chan *encoded
}

// prepare checks the batch with the table's one definition of a valid
// reading (series.Checker) and converts the rows that are not repeats of
// an earlier row into what the staging table receives.
func (h *Tier) prepare(t *series.Table, rows []series.Reading) (*batch, error) {
	chk, err := series.NewChecker(t, h.cal).CheckBatch("write", rows)
	if err != nil {
		return nil, err
	}
	b := &batch{status: make([]series.Status, len(rows))}
	n := 0
	for i := range rows {
		if chk.Repeats[i] {
			b.status[i] = series.Present
		} else {
			n++
		}
	}
	b.rows = h.spare.take(n)
	stageRows(t, rows, chk, b.rows)
	return b, nil
}

// stageRows stages the rows that are not repeats into out, in order. A
// large batch is staged in consecutive parts, one per processor, as
// series.Checker checks it: each row's conversion stands alone.
func stageRows(t *series.Table, rows []series.Reading, chk *series.Batch, out []staged) {
	parts := min(runtime.GOMAXPROCS(0), len(rows)/parallelRows)
	if parts <= 1 {
		stagePart(t, rows, chk, 0, len(rows), out)
		return
	}
	var wg sync.WaitGroup
	at := 0 // where the part's first staged row goes
	for k := range parts {
		lo, hi := k*len(rows)/parts, (k+1)*len(rows)/parts
		part := out[at:]
		wg.Go(func() { stagePart(t, rows, chk, lo, hi, part) })
		for i := lo; i < hi; i++ {
			if !chk.Repeats[i] {
				at++
			}
		}
	}
	wg.Wait()
}

// parallelRows is the least number of rows stageRows gives a goroutine
// of its own.
const parallelRows = 2048

// stagePart stages rows[lo:hi] that are not repeats into out, from its
// start.
func stagePart(t *series.Table, rows []series.Reading, chk *series.Batch, lo, hi int, out []staged) {
	j := 0
	for i := lo; i < hi; i++ {
		if !chk.Repeats[i] {
			out[j] = stage(t, &rows[i], i, &chk.Derived[i])
			out[j].shared = chk.Shared[i]
			j++
		}
	}
}

// stage converts a checked reading into a staged row.
func stage(t *series.Table, r *series.Reading, i int, d *series.Derived) staged {
	day := d.BalancingDay
	s := staged{
		src:     r,
		row:     int32(i),
		sparte:  d.Commodity.String(),
		unit:    r.Unit.String(),
		quality: r.Quality.String(),
		from:    r.From.UTC(),
		value:   pgnum.Micro(r.Value),
		version: pgnum.Uint(r.Version),
		day:     time.Date(day.Year, day.Month, day.Day, 0, 0, 0, 0, time.UTC),
		anc:     d.Ancestors,
	}
	if t.TimeModel == series.Interval {
		s.to = r.To.UTC()
		s.resolution = r.Resolution.String()
	}
	if r.MeLo != "" {
		s.melo = &r.MeLo
	}
	if r.Subject != "" {
		s.subject = &r.Subject
	}
	if len(t.Columns) > 0 {
		s.extra = make([]any, len(t.Columns))
		for i, c := range t.Columns {
			v, ok := r.Extra[c.Name]
			switch {
			case !ok:
			case c.ColumnType() == series.BigInt:
				n, _ := strconv.ParseInt(v, 10, 64) // checked by the Checker
				s.extra[i] = &n
			default:
				s.extra[i] = &v
			}
		}
	}
	return s
}
