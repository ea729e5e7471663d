package hot

import (
	"testing"
	"time"
)

func TestFloor(t *testing.T) {
	d := func(n int) time.Time { return time.Date(2026, 3, n, 0, 0, 0, 0, time.UTC) }
	part := func(n int, attached bool) Partition { return Partition{From: d(n), To: d(n + 1), Attached: attached} }
	for _, c := range []struct {
		name               string
		parts              []Partition
		detached, attached time.Time
	}{
		{"none", nil, time.Time{}, time.Time{}},
		{"all attached", []Partition{part(3, true), part(1, true), part(2, true)}, time.Time{}, d(1)},
		{"detached below", []Partition{part(1, false), part(2, true), part(3, true)}, d(2), d(2)},
		{"detached between", []Partition{part(1, true), part(2, false), part(3, true)}, d(3), d(3)},
		{"detached on top", []Partition{part(1, true), part(2, false)}, d(3), time.Time{}},
	} {
		detached, attached := floor(c.parts)
		if !detached.Equal(c.detached) || !attached.Equal(c.attached) {
			t.Errorf("%s: floor = %v, %v; want %v, %v", c.name, detached, attached, c.detached, c.attached)
		}
	}
}
