package archivebench

import (
	"runtime"
	"testing"
)

func TestMeters(t *testing.T) {
	for _, c := range []struct {
		readings int
		rate     float64
		want     int
	}{
		{1_000_000, 0, 10_417},
		{1_000_000, 0.03, 10_113},
		{5_000_000, 0.03, 50_566},
		{10, 0.03, 1},
	} {
		if got := meters(c.readings, c.rate); got != c.want {
			t.Errorf("meters(%d, %v) = %d, want %d", c.readings, c.rate, got, c.want)
		}
	}
}

func TestRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("VmRSS is Linux's")
	}
	if got := rss(); got < 1<<20 {
		t.Errorf("rss() = %d, want at least a MiB", got)
	}
	stop := sampleMemory(1, "")
	peakRSS, peakHeap, peakLive, n := stop()
	if peakRSS == 0 || peakHeap == 0 || peakLive == 0 || n < 1 {
		t.Errorf("sampleMemory: rss %d, heap %d, live %d, %d samples", peakRSS, peakHeap, peakLive, n)
	}
}
