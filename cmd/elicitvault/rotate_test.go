package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/internal/envelope"
	"github.com/elicitvault/elicitvault/internal/ring"
	"github.com/elicitvault/elicitvault/store/memory"
)

// fakeSignals is an env whose SIGINT the test sends.
func fakeSignals() (*env, chan os.Signal) {
	ch := make(chan os.Signal, 2)
	return &env{signals: func() (<-chan os.Signal, func()) { return ch, func() {} }}, ch
}

// TestRotateInterruptResume interrupts a rotation, which stops after the
// current batch with a cursor, and resumes it from that cursor.
func TestRotateInterruptResume(t *testing.T) {
	ctx := context.Background()
	a, err := ring.New([]byte(testSecrets["A"]), nil)
	if err != nil {
		t.Fatal(err)
	}
	ba, err := ring.New([]byte(testSecrets["B"]), [][]byte{[]byte(testSecrets["A"])})
	if err != nil {
		t.Fatal(err)
	}
	s := memory.New(nil)
	defer s.Close()
	const n = 1000
	expiry := time.Now().Add(time.Hour)
	for i := range n {
		b := envelope.Binding{Purpose: "pending", SessionID: fmt.Sprint("s", i)}
		rec, err := a.SealRecord(b, []byte("x"), expiry)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, a.StoreKey(b), rec, expiry); err != nil {
			t.Fatal(err)
		}
	}

	// One SIGINT before the first batch ends: it stops after that batch.
	e, sig := fakeSignals()
	in := watchInterrupts(ctx, e)
	sig <- os.Interrupt
	<-in.soft.Done()
	var stderr bytes.Buffer
	p, err := rewrap(in, ba, s, ring.RewrapOptions{BatchSize: 100}, newProgressBar(&stderr))
	in.release()
	if !errors.Is(err, errInterrupted) {
		t.Fatalf("err = %v, want interrupted", err)
	}
	if p.Scanned != 100 || p.Rewrapped != 100 || p.Cursor == "" {
		t.Fatalf("after one batch: %+v", p)
	}
	first := p.Rewrapped

	// Resume from the cursor: the rest is rewrapped.
	e, _ = fakeSignals()
	in = watchInterrupts(ctx, e)
	p, err = rewrap(in, ba, s, ring.RewrapOptions{BatchSize: 100, Cursor: p.Cursor}, newProgressBar(&stderr))
	in.release()
	if err != nil || p.Cursor != "" {
		t.Fatalf("resumed: %+v, %v", p, err)
	}
	// Records moved before the cursor may be met again (as current); none
	// is rewrapped twice, and none under A is left.
	if first+p.Rewrapped != n || p.Failed != 0 {
		t.Fatalf("rewrapped %d + %d of %d: %+v", first, p.Rewrapped, n, p)
	}
	r, err := ring.Inspect(ctx, s, time.Now())
	if err != nil || r.Records[a.PrimaryKeyID()] != 0 || r.Records[ba.PrimaryKeyID()] != n {
		t.Fatalf("inspect: %+v, %v", r, err)
	}
}

// TestRotateSecondInterrupt stops at once: the rewrap returns with the
// cursor it started from.
func TestRotateSecondInterrupt(t *testing.T) {
	ctx := context.Background()
	ba, err := ring.New([]byte(testSecrets["B"]), [][]byte{[]byte(testSecrets["A"])})
	if err != nil {
		t.Fatal(err)
	}
	s := memory.New(nil)
	defer s.Close()
	s.Put(ctx, "k", []byte("v"), time.Now().Add(time.Hour))
	e, sig := fakeSignals()
	in := watchInterrupts(ctx, e)
	defer in.release()
	sig <- os.Interrupt
	sig <- os.Interrupt
	<-in.hard.Done()
	p, err := rewrap(in, ba, s, ring.RewrapOptions{Cursor: ""}, newProgressBar(&bytes.Buffer{}))
	if !errors.Is(err, errInterrupted) || p.Scanned != 0 {
		t.Fatalf("%+v, %v", p, err)
	}
}

func TestProgressBar(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	b := &progressBar{w: &buf, tty: true, width: 100, now: func() time.Time { return clock }, total: 200, counted: true}
	b.update(ring.Progress{Scanned: 100, Rewrapped: 50, Cursor: "c"})
	clock = clock.Add(50 * time.Millisecond) // too soon: not drawn
	b.update(ring.Progress{Scanned: 150, Rewrapped: 75, Cursor: "c"})
	clock = clock.Add(time.Second)
	b.update(ring.Progress{Scanned: 200, Rewrapped: 100, Cursor: "c"})
	b.p = ring.Progress{Scanned: 300, Rewrapped: 200}
	b.done()
	out := buf.String()
	for _, want := range []string{
		"\r[#####...............]  25% 50/200 rewrapped",
		"\r[##########..........]  50% 100/200 rewrapped",
		"\r[####################] 100% 200/200 rewrapped, 0 failed, 0 changed, 0 current, 300 scanned\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("bar output %q lacks %q", out, want)
		}
	}
	if strings.Contains(out, "75/200") {
		t.Errorf("bar redrawn within 100ms: %q", out)
	}

	// A narrow terminal gets the parts that fit, whole.
	buf.Reset()
	b = &progressBar{w: &buf, tty: true, width: 60, now: func() time.Time { return clock }, total: 200, counted: true}
	b.update(ring.Progress{Scanned: 100, Rewrapped: 50, Cursor: "c"})
	if got, want := buf.String(), "\r[#####...............]  25% 50/200 rewrapped, 0 failed"; got != want {
		t.Errorf("narrow bar %q, want %q", got, want)
	}

	// Not a terminal: plain lines, at most one a second, and the last one.
	buf.Reset()
	b = &progressBar{w: &buf, now: func() time.Time { return clock }}
	b.update(ring.Progress{Scanned: 10, Rewrapped: 10, Cursor: "c"})
	b.update(ring.Progress{Scanned: 20, Rewrapped: 20, Cursor: "c"})
	b.update(ring.Progress{Scanned: 30, Rewrapped: 30})
	b.done()
	want := "rotate: 10 rewrapped, 0 failed, 0 changed, 0 current, 10 scanned\n" +
		"rotate: 30 rewrapped, 0 failed, 0 changed, 0 current, 30 scanned\n"
	if buf.String() != want {
		t.Errorf("plain output:\n%s\nwant:\n%s", buf.String(), want)
	}
}
