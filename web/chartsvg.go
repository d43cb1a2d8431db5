package web

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
	"time"
)

// The charts are inline SVG drawn here, on the server: no script, no
// external resource, and they print. Colours come from classes in
// static/style.css. Every text that came from a request (route names) goes
// through html.EscapeString; the rest are numbers and dates.

const (
	chartW = 760
	chartH = 260
	padL   = 48
	padR   = 12
	padT   = 12
	padB   = 40
)

// series are the outcomes in stacking order, with their class and label.
var series = []struct {
	class, label string
	n            func(c counts) int
}{
	{"s-approved", "approved", func(c counts) int { return c.Approved }},
	{"s-rejected", "rejected", func(c counts) int { return c.Rejected }},
	{"s-expired", "expired", func(c counts) int { return c.Expired }},
	{"s-cancelled", "cancelled", func(c counts) int { return c.Cancelled }},
	{"s-pending", "pending", func(c counts) int { return c.Pending }},
}

type svg struct{ b strings.Builder }

func newSVG(w, h int, label string) *svg {
	s := &svg{}
	fmt.Fprintf(&s.b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`,
		w, h, html.EscapeString(label))
	return s
}

func (s *svg) add(format string, a ...any) { fmt.Fprintf(&s.b, format, a...) }

// html returns the drawing; everything in it was escaped or formatted from
// numbers, which is what makes template.HTML safe here.
func (s *svg) html() template.HTML { return template.HTML(s.b.String() + "</svg>") }

// niceCeil rounds up to 1, 2 or 5 times a power of ten, for axis tops.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// yAxis draws four gridlines from 0 to top, labelled by label.
func (s *svg) yAxis(top float64, label func(float64) string) {
	plotH := float64(chartH - padT - padB)
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		y := float64(chartH-padB) - plotH*float64(i)/4
		s.add(`<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, padL, chartW-padR, y, y)
		s.add(`<text class="axis" x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-6, y+4, html.EscapeString(label(v)))
	}
}

// xLabels writes about ten day labels under n slots.
func (s *svg) xLabels(days []*dayStats) {
	n := len(days)
	slot := float64(chartW-padL-padR) / float64(max(n, 1))
	every := max(1, int(math.Ceil(float64(n)/10)))
	for i, d := range days {
		if i%every != 0 {
			continue
		}
		s.add(`<text class="axis" x="%.1f" y="%d" text-anchor="middle">%s</text>`,
			float64(padL)+slot*(float64(i)+0.5), chartH-padB+16, d.Day.Format("Jan 2"))
	}
}

// svgPerDay is a stacked bar per day: how many requests came, and what
// became of them.
func svgPerDay(days []*dayStats) template.HTML {
	s := newSVG(chartW, chartH, "Requests per day, stacked by outcome")
	top := 0
	for _, d := range days {
		top = max(top, d.Total)
	}
	yTop := 4 * math.Max(1, math.Ceil(niceCeil(float64(top)/4))) // whole-number ticks
	s.yAxis(yTop, func(v float64) string { return fmt.Sprintf("%g", v) })
	plotH := float64(chartH - padT - padB)
	slot := float64(chartW-padL-padR) / float64(max(len(days), 1))
	bw := math.Max(slot*0.7, 1)
	for i, d := range days {
		x := float64(padL) + slot*float64(i) + (slot-bw)/2
		y := float64(chartH - padB)
		for _, se := range series {
			n := se.n(d.counts)
			if n == 0 {
				continue
			}
			h := plotH * float64(n) / yTop
			y -= h
			s.add(`<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s: %d %s</title></rect>`,
				se.class, x, y, bw, h, d.Day.Format("Mon 2 Jan"), n, se.label)
		}
	}
	s.xLabels(days)
	return s.html()
}

// durationUnit picks seconds, minutes or hours for an axis reaching top.
func durationUnit(top time.Duration) (time.Duration, string) {
	switch {
	case top >= 2*time.Hour:
		return time.Hour, "h"
	case top >= 2*time.Minute:
		return time.Minute, "m"
	}
	return time.Second, "s"
}

// svgWaits draws the median and p90 time to decision of each day's
// requests as two lines; days without a decision have no point.
func svgWaits(days []*dayStats) template.HTML {
	s := newSVG(chartW, chartH, "Time to decision per day: median and 90th percentile")
	var top time.Duration
	for _, d := range days {
		top = max(top, d.P90)
	}
	unit, suffix := durationUnit(top)
	yTop := 4 * niceCeil(float64(top)/float64(unit)/4)
	s.yAxis(yTop, func(v float64) string { return fmt.Sprintf("%g%s", math.Round(v*10)/10, suffix) })
	plotH := float64(chartH - padT - padB)
	slot := float64(chartW-padL-padR) / float64(max(len(days), 1))
	for _, line := range []struct {
		class, label string
		of           func(*dayStats) time.Duration
	}{
		{"l-p90", "p90", func(d *dayStats) time.Duration { return d.P90 }},
		{"l-median", "median", func(d *dayStats) time.Duration { return d.Median }},
	} {
		var pts []string
		var dots strings.Builder
		for i, d := range days {
			if len(d.waits) == 0 {
				continue
			}
			x := float64(padL) + slot*(float64(i)+0.5)
			y := float64(chartH-padB) - plotH*(float64(line.of(d))/float64(unit))/yTop
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			fmt.Fprintf(&dots, `<circle class="%s" cx="%.1f" cy="%.1f" r="3.5"><title>%s: %s %s (%d decided)</title></circle>`,
				line.class, x, y, d.Day.Format("Mon 2 Jan"), line.label, roundDuration(line.of(d)), len(d.waits))
		}
		if len(pts) > 1 {
			s.add(`<polyline class="%s" points="%s"/>`, line.class, strings.Join(pts, " "))
		}
		s.b.WriteString(dots.String())
	}
	s.xLabels(days)
	return s.html()
}

// svgPerRoute draws one 100% bar per route, split by outcome.
func svgPerRoute(routes []*routeStats) template.HTML {
	const rowH, labelW, countW = 30, 150, 64
	h := max(len(routes), 1)*rowH + 8
	s := newSVG(chartW, h, "Outcome rates per route")
	barW := float64(chartW - labelW - countW)
	for i, r := range routes {
		y := float64(i*rowH + 4)
		name := r.Route
		if name == "" {
			name = "(default)"
		}
		s.add(`<text class="label" x="%d" y="%.1f" text-anchor="end">%s</text>`, labelW-8, y+17, html.EscapeString(truncateRunes(name, 20)))
		x := float64(labelW)
		for _, se := range series {
			n := se.n(r.counts)
			if n == 0 {
				continue
			}
			w := barW * float64(n) / float64(r.Total)
			s.add(`<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%d"><title>%s: %d %s (%.0f%%)</title></rect>`,
				se.class, x, y, w, rowH-8, html.EscapeString(name), n, se.label, r.Pct(n))
			x += w
		}
		s.add(`<text class="axis" x="%d" y="%.1f">%d</text>`, chartW-countW+8, y+17, r.Total)
	}
	return s.html()
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
