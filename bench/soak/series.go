package main

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// writeSeries writes the soak's samples as base.csv and their plot as
// base.svg (one image a run: RSS, BPF kernel memory, the archive against its limit, the
// slowest control API answer against the 100 ms bound, over time).
func writeSeries(base string, samples []sample) {
	var csv strings.Builder
	csv.WriteString("t_s,rss_kb,bpf_memory_bytes,agent_cpu_s,archive_bytes,archive_limit_bytes,api_max_ms,churn_exited,lost_notices,targets\n")
	for _, s := range samples {
		fmt.Fprintf(&csv, "%.0f,%d,%.0f,%.3f,%d,%d,%.3f,%.0f,%.0f,%.0f\n", s.at.Seconds(), s.p.rssKB, s.m["rtscope_bpf_memory_bytes"],
			s.p.cpu.Seconds(), s.archive, soakArchiveMB<<20, float64(s.apiMax)/float64(time.Millisecond),
			s.m[`rtscope_tasks_exited_total{target="churn"}`], s.m[`rtscope_lost_total{kind="notices"}`], s.m["rtscope_targets"])
	}
	if err := os.WriteFile(base+".csv", []byte(csv.String()), 0o644); err != nil {
		fatal(err.Error())
	}
	panels := []panel{
		{title: "agent RSS, MiB", y: func(s sample) float64 { return float64(s.p.rssKB) / 1024 }},
		{title: "kernel memory of the engine's BPF maps and programs, MiB", y: func(s sample) float64 { return s.m["rtscope_bpf_memory_bytes"] / (1 << 20) }},
		{title: fmt.Sprintf("archive, MiB (limit %d)", soakArchiveMB), y: func(s sample) float64 { return float64(s.archive) / (1 << 20) }, limit: soakArchiveMB},
		{title: "slowest control API answer in 10 s, ms (bound 100)", y: func(s sample) float64 { return float64(s.apiMax) / float64(time.Millisecond) }, limit: 100},
	}
	if err := os.WriteFile(base+".svg", []byte(plot(samples, panels)), 0o644); err != nil {
		fatal(err.Error())
	}
}

// panel is one plotted series, with its limit drawn when above zero.
type panel struct {
	title string
	y     func(sample) float64
	limit float64
}

// The plot's geometry, in SVG units: each panel's box and margins.
const (
	plotW, panelH, marginL, marginT, gap = 720.0, 150.0, 60.0, 24.0, 40.0
)

// plot draws the panels one above the other over the samples' time.
func plot(samples []sample, panels []panel) string {
	var b strings.Builder
	h := marginT + float64(len(panels))*(panelH+gap)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", plotW+marginL+20, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	tMax := samples[len(samples)-1].at.Seconds()
	for i, p := range panels {
		top := marginT + float64(i)*(panelH+gap)
		yMax := p.limit * 1.1
		for _, s := range samples {
			yMax = max(yMax, p.y(s)*1.1)
		}
		if yMax == 0 {
			yMax = 1
		}
		x := func(t float64) float64 { return marginL + t/tMax*plotW }
		y := func(v float64) float64 { return top + panelH - v/yMax*panelH }
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f">%s</text>`+"\n", marginL, top-6, p.title)
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`+"\n", marginL, top, plotW, panelH)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end">%.3g</text><text x="%.0f" y="%.0f" text-anchor="end">0</text>`+"\n",
			marginL-4, top+10, yMax, marginL-4, top+panelH)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end">%.0f s</text>`+"\n", marginL+plotW, top+panelH+14, tMax)
		if p.limit > 0 {
			fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="red" stroke-dasharray="4 3"/>`+"\n", marginL, marginL+plotW, y(p.limit), y(p.limit))
		}
		var pts []string
		for _, s := range samples {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.at.Seconds()), y(p.y(s))))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="%s"/>`+"\n", strings.Join(pts, " "))
	}
	b.WriteString("</svg>\n")
	return b.String()
}
