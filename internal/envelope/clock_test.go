package envelope

import (
	"testing"
	"time"
)

// The default clock agrees with time.Now, in time and in milliseconds.
func TestWallClock(t *testing.T) {
	var c wallClock
	for range 3 {
		before := time.Now()
		now, ms := c.now(), c.nowMilli()
		after := time.Now()
		if now.Before(before) || now.After(after) {
			t.Fatalf("now %v not within [%v, %v]", now, before, after)
		}
		if ms < before.UnixMilli() || ms > after.UnixMilli() {
			t.Fatalf("nowMilli %d not within [%d, %d]", ms, before.UnixMilli(), after.UnixMilli())
		}
		time.Sleep(2 * time.Millisecond)
	}
	// An anchor a second old is replaced.
	old := c.anchor.Load()
	stale := *old
	stale.t = stale.t.Add(-2 * time.Second)
	stale.nano -= int64(2 * time.Second)
	c.anchor.Store(&stale)
	if got := c.nowMilli(); got < time.Now().UnixMilli()-5 {
		t.Fatalf("stale anchor used: %d", got)
	}
	if c.anchor.Load() == &stale {
		t.Fatal("anchor not renewed")
	}
}
