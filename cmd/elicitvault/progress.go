package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/elicitvault/elicitvault/internal/ring"
)

// progressBar shows a rewrap's progress on stderr: one line redrawn with \r
// on a terminal, otherwise a plain line at most once a second. It shows
// counts only, never keys or values.
type progressBar struct {
	w       io.Writer
	tty     bool
	width   int
	total   int  // records to rewrap, counted before the rewrap
	counted bool // whether total is known
	now     func() time.Time

	last    time.Time
	lastLen int
	shown   bool
	p       ring.Progress // the latest progress
	drawn   ring.Progress // the progress last drawn
}

func newProgressBar(w io.Writer) *progressBar {
	b := &progressBar{w: w, width: 80, now: time.Now}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		b.tty = true
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 20 {
			b.width = width
		}
	}
	return b
}

func (b *progressBar) update(p ring.Progress) {
	b.p = p
	interval := time.Second
	if b.tty {
		interval = 100 * time.Millisecond
	}
	if now := b.now(); now.Sub(b.last) >= interval {
		b.last = now
		b.draw()
	}
}

// done draws the final state and ends the line.
func (b *progressBar) done() {
	if !b.shown && b.p.Scanned == 0 {
		return
	}
	if !b.shown || b.drawn != b.p {
		b.draw()
	}
	if b.tty {
		fmt.Fprintln(b.w)
	}
}

func (b *progressBar) draw() {
	b.shown = true
	p := b.p
	b.drawn = p
	done := p.Rewrapped + p.Failed + p.Changed
	if !b.tty {
		rest := fmt.Sprintf("%d failed, %d changed, %d current, %d scanned", p.Failed, p.Changed, p.Current, p.Scanned)
		if b.counted {
			fmt.Fprintf(b.w, "rotate: %d/%d rewrapped, %s\n", p.Rewrapped, b.total, rest)
		} else {
			fmt.Fprintf(b.w, "rotate: %d rewrapped, %s\n", p.Rewrapped, rest)
		}
		return
	}
	parts := []string{fmt.Sprintf("%d rewrapped", p.Rewrapped)}
	line := ""
	if b.counted {
		frac := 1.0
		if b.total > 0 && p.Cursor != "" {
			frac = min(float64(done)/float64(b.total), 1)
		}
		const barWidth = 20
		filled := int(frac * barWidth)
		line = fmt.Sprintf("[%s%s] %3.0f%% ", strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), frac*100)
		parts[0] = fmt.Sprintf("%d/%d rewrapped", p.Rewrapped, b.total)
	}
	parts = append(parts, fmt.Sprintf("%d failed", p.Failed), fmt.Sprintf("%d changed", p.Changed),
		fmt.Sprintf("%d current", p.Current), fmt.Sprintf("%d scanned", p.Scanned))
	// What does not fit the terminal's width is left out, part by part.
	for i, part := range parts {
		if i > 0 {
			part = ", " + part
		}
		if len(line)+len(part) > b.width-1 && i > 0 {
			break
		}
		line += part
	}
	pad := max(b.lastLen-len(line), 0)
	fmt.Fprintf(b.w, "\r%s%s", line, strings.Repeat(" ", pad))
	b.lastLen = len(line)
}
