// Package testclock is a clock for tests that runs with the wall clock and
// jumps ahead when told, so that a test reaches an expiry without waiting
// for it, while servers it cannot control (an OAuth provider, a database)
// keep the wall clock.
package testclock

import (
	"sync/atomic"
	"time"
)

// Clock is the wall clock plus the sum of every Advance. The zero value is
// the wall clock.
type Clock struct{ skew atomic.Int64 }

// Now returns the wall clock's time, advanced.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.skew.Load())) }

// Advance moves the clock ahead by d.
func (c *Clock) Advance(d time.Duration) { c.skew.Add(int64(d)) }
