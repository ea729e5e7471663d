package dashboard

// Charts as inline SVG, drawn in Go: a line over time, bars over time and
// pairs of bars (expected against present). Every text is escaped; the
// results are safe to put into the page as template.HTML.

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"
)

// point is one value at a time.
type point struct {
	T time.Time
	V float64
}

// Chart geometry, in SVG user units: the plot area sits inside margins
// that hold the axis labels.
const (
	chartW, chartH                     = 520, 170
	marginL, marginR, marginT, marginB = 56, 12, 22, 26
)

// Colours of the series.
const (
	colorLag      = "#1f6feb"
	colorRows     = "#2da44e"
	colorDuration = "#bf8700"
	colorExpected = "#8c959f"
	colorPresent  = "#1f6feb"
)

// frame starts a chart: the svg element, its title, the axes and the
// labels of the y maximum and the first and last day.
func frame(b *strings.Builder, title, unit string, first, last time.Time, ymax float64) {
	esc := template.HTMLEscapeString
	fmt.Fprintf(b, `<svg class="chart" role="img" aria-label="%s" viewBox="0 0 %d %d" width="%d" height="%d" xmlns="http://www.w3.org/2000/svg">`,
		esc(title), chartW, chartH, chartW, chartH)
	fmt.Fprintf(b, `<title>%s</title>`, esc(title))
	fmt.Fprintf(b, `<text x="%d" y="14" class="ct">%s</text>`, marginL, esc(title))
	x0, y0, x1 := marginL, chartH-marginB, chartW-marginR
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, x0, y0, x1, y0)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, x0, marginT, x0, y0)
	fmt.Fprintf(b, `<text x="%d" y="%d" class="yl" text-anchor="end">%s</text>`, x0-4, marginT+8, esc(number(ymax)))
	fmt.Fprintf(b, `<text x="%d" y="%d" class="yl" text-anchor="end">0</text>`, x0-4, y0)
	fmt.Fprintf(b, `<text x="%d" y="%d" class="yl" text-anchor="end" transform="rotate(-90 %d %d)">%s</text>`,
		12, marginT+8, 12, marginT+8, esc(unit))
	fmt.Fprintf(b, `<text x="%d" y="%d" class="xl">%s</text>`, x0, chartH-8, first.Format(time.DateOnly))
	fmt.Fprintf(b, `<text x="%d" y="%d" class="xl" text-anchor="end">%s</text>`, x1, chartH-8, last.Format(time.DateOnly))
}

// empty is the chart of a span without data: the frame says so.
func empty(title string) template.HTML {
	esc := template.HTMLEscapeString
	return template.HTML(fmt.Sprintf(`<svg class="chart empty" role="img" aria-label="%s" viewBox="0 0 %d 40" width="%d" height="40" xmlns="http://www.w3.org/2000/svg"><title>%s</title><text x="%d" y="14" class="ct">%s</text><text x="%d" y="32" class="xl">no data in the span</text></svg>`,
		esc(title), chartW, chartW, esc(title), marginL, esc(title), marginL))
}

// scale maps times and values onto the plot area.
type scale struct {
	t0, t1 time.Time
	ymax   float64
}

func newScale(ps ...[]point) scale {
	var s scale
	for _, p := range ps {
		for _, q := range p {
			if s.t0.IsZero() || q.T.Before(s.t0) {
				s.t0 = q.T
			}
			if q.T.After(s.t1) {
				s.t1 = q.T
			}
			s.ymax = math.Max(s.ymax, q.V)
		}
	}
	if s.ymax <= 0 {
		s.ymax = 1
	}
	return s
}

func (s scale) x(t time.Time) float64 {
	span := s.t1.Sub(s.t0)
	if span <= 0 {
		return float64(marginL+chartW-marginR) / 2
	}
	return float64(marginL) + 6 + float64(chartW-marginR-marginL-12)*float64(t.Sub(s.t0))/float64(span)
}

func (s scale) y(v float64) float64 {
	return float64(chartH-marginB) - float64(chartH-marginB-marginT)*v/s.ymax
}

// barWidth is the width of n bars side by side, in the plot area.
func barWidth(n int) float64 {
	return math.Max(1.5, math.Min(18, float64(chartW-marginL-marginR-12)/float64(max(n, 1))*0.7))
}

// lineChart draws ps as a line with a dot at each point.
func lineChart(title, unit string, ps []point) template.HTML {
	if len(ps) == 0 {
		return empty(title)
	}
	s := newScale(ps)
	var b strings.Builder
	frame(&b, title, unit, s.t0, s.t1, s.ymax)
	b.WriteString(`<polyline fill="none" stroke="` + colorLag + `" stroke-width="2" points="`)
	for _, p := range ps {
		fmt.Fprintf(&b, "%.1f,%.1f ", s.x(p.T), s.y(p.V))
	}
	b.WriteString(`"/>`)
	for _, p := range ps {
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="%s"><title>%s: %s %s</title></circle>`,
			s.x(p.T), s.y(p.V), colorLag, p.T.Format(time.RFC3339), number(p.V), template.HTMLEscapeString(unit))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// barChart draws a bar per point.
func barChart(title, unit string, ps []point, color string) template.HTML {
	if len(ps) == 0 {
		return empty(title)
	}
	s := newScale(ps)
	var b strings.Builder
	frame(&b, title, unit, s.t0, s.t1, s.ymax)
	w := barWidth(len(ps))
	for _, p := range ps {
		y := s.y(p.V)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s %s</title></rect>`,
			s.x(p.T)-w/2, y, w, float64(chartH-marginB)-y, color, p.T.Format(time.DateOnly), number(p.V), template.HTMLEscapeString(unit))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// pairChart draws per day the expected count as an outlined bar and the
// present count as a filled bar over it, red where fewer are present
// than expected: a gap is seen at a glance.
func pairChart(title string, expected, present []point) template.HTML {
	if len(expected) == 0 {
		return empty(title)
	}
	s := newScale(expected, present)
	var b strings.Builder
	frame(&b, title, "intervals", s.t0, s.t1, s.ymax)
	w := barWidth(len(expected))
	for i, e := range expected {
		p := present[i]
		fill := colorPresent
		if p.V < e.V {
			fill = "#cf222e"
		}
		ye, yp := s.y(e.V), s.y(p.V)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="%s"/>`,
			s.x(e.T)-w/2, ye, w, float64(chartH-marginB)-ye, colorExpected)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s of %s present</title></rect>`,
			s.x(p.T)-w/2, yp, w, float64(chartH-marginB)-yp, fill, e.T.Format(time.DateOnly), number(p.V), number(e.V))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// number formats a value of an axis or a tooltip.
func number(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
