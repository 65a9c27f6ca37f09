package envelope

import (
	"sync/atomic"
	"time"
)

// wallClock reads the wall clock through the monotonic clock: it keeps an
// anchor (a time.Now reading) and returns the anchor plus the monotonic
// time elapsed since, taking a new anchor once the old one is a second old.
// That is one clock read per call instead of the two of time.Now (wall and
// monotonic), on the hot path of every Open; a step of the system's wall
// clock shows within a second.
type wallClock struct {
	anchor atomic.Pointer[clockAnchor]
}

type clockAnchor struct {
	t    time.Time // with its monotonic reading
	nano int64     // t in Unix nanoseconds
}

// since returns the anchor and the time elapsed since it, renewing the
// anchor when it is missing or too old.
func (c *wallClock) since() (*clockAnchor, time.Duration) {
	if a := c.anchor.Load(); a != nil {
		if d := time.Since(a.t); d >= 0 && d < time.Second {
			return a, d
		}
	}
	t := time.Now()
	a := &clockAnchor{t: t, nano: t.UnixNano()}
	c.anchor.Store(a)
	return a, 0
}

func (c *wallClock) now() time.Time {
	a, d := c.since()
	return a.t.Add(d)
}

// nowMilli returns now in Unix milliseconds, rounded down.
func (c *wallClock) nowMilli() int64 {
	a, d := c.since()
	n := a.nano + int64(d)
	ms := n / 1e6
	if n < 0 && n%1e6 != 0 {
		ms-- // round down, as time.Time.UnixMilli does
	}
	return ms
}
