package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

// pubsubDriver is a driver of Publish and Subscribe alone that records its
// subscriptions: it fails the test when a channel is subscribed twice at
// once, as the Store promises it never is.
type pubsubDriver struct {
	refusingDriver
	mu         sync.Mutex
	subs       map[string]func(store.Message)
	subscribed map[string]int // Subscribe calls that succeeded, by channel
	gate       chan struct{}  // when set, Subscribe waits for it
	entered    chan struct{}  // when set, Subscribe sends on it first
	fail       error          // when set, Subscribe fails with it (once)
}

func newPubsubDriver(t *testing.T) *pubsubDriver {
	return &pubsubDriver{refusingDriver: refusingDriver{t: t}, subs: map[string]func(store.Message){}, subscribed: map[string]int{}}
}

func (d *pubsubDriver) Publish(_ context.Context, channel string, msg []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if deliver := d.subs[channel]; deliver != nil {
		deliver(store.Message{Data: msg})
	}
	return nil
}

func (d *pubsubDriver) Subscribe(ctx context.Context, channel string, deliver func(store.Message)) (func(), error) {
	if d.entered != nil {
		d.entered <- struct{}{}
	}
	if d.gate != nil {
		select {
		case <-d.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.fail; err != nil {
		d.fail = nil
		return nil, err
	}
	if d.subs[channel] != nil {
		d.t.Errorf("channel %q subscribed twice at once", channel)
	}
	d.subs[channel] = deliver
	d.subscribed[channel]++
	var once sync.Once
	return func() {
		once.Do(func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			delete(d.subs, channel)
		})
	}, nil
}

func (d *pubsubDriver) state(channel string) (subscribed int, active bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.subscribed[channel], d.subs[channel] != nil
}

func recvData(t *testing.T, sub store.Subscription) string {
	t.Helper()
	select {
	case m := <-sub.Messages():
		return string(m.Data)
	case <-time.After(5 * time.Second):
		t.Fatal("no message")
		return ""
	}
}

// TestPortableFanOut holds that the Store subscribes its driver once per
// channel, hands each message to every subscription of the channel, and
// unsubscribes the driver when the channel's last subscription closes.
func TestPortableFanOut(t *testing.T) {
	t.Parallel()
	d := newPubsubDriver(t)
	p := store.New("test", d, nil)
	defer p.Close()
	ctx := t.Context()
	a, err := p.Subscribe(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Subscribe(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := d.state("c"); n != 1 {
		t.Fatalf("driver subscribed %d times for two subscriptions, want once", n)
	}
	if err := p.Publish(ctx, "c", []byte("m1")); err != nil {
		t.Fatal(err)
	}
	if got := recvData(t, a); got != "m1" {
		t.Errorf("a got %q", got)
	}
	if got := recvData(t, b); got != "m1" {
		t.Errorf("b got %q", got)
	}
	a.Close()
	if _, active := d.state("c"); !active {
		t.Fatal("closing one of two subscriptions unsubscribed the driver")
	}
	p.Publish(ctx, "c", []byte("m2"))
	if got := recvData(t, b); got != "m2" {
		t.Errorf("b got %q after a closed", got)
	}
	b.Close()
	if _, active := d.state("c"); active {
		t.Fatal("the driver is still subscribed after the last subscription closed")
	}
	c, err := p.Subscribe(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n, active := d.state("c"); n != 2 || !active {
		t.Errorf("after a new subscription: driver subscribed %d times (active %v), want 2 (true)", n, active)
	}
}

// TestPortableFanOutWaits holds that a second subscription of a channel
// returns only once the first has subscribed the driver, and that when
// the first fails the second subscribes the driver itself.
func TestPortableFanOutWaits(t *testing.T) {
	t.Parallel()
	d := newPubsubDriver(t)
	d.gate = make(chan struct{})
	d.entered = make(chan struct{}, 2)
	d.fail = errors.New("connection reset")
	p := store.New("test", d, nil)
	defer p.Close()
	ctx := t.Context()
	first := make(chan error, 1)
	go func() {
		_, err := p.Subscribe(ctx, "c")
		first <- err
	}()
	<-d.entered // the first is in the driver's Subscribe
	second := make(chan store.Subscription, 1)
	go func() {
		sub, err := p.Subscribe(ctx, "c")
		if err != nil {
			t.Error(err)
		}
		second <- sub
	}()
	select {
	case <-second:
		t.Fatal("a subscription returned before the driver subscribed")
	case <-time.After(50 * time.Millisecond):
	}
	close(d.gate)
	if err := <-first; err == nil || err.Error() != "test: subscribe: connection reset" {
		t.Errorf("first Subscribe: %v, want the driver's error", err)
	}
	sub := <-second
	if sub == nil {
		t.Fatal("no second subscription")
	}
	defer sub.Close()
	if n, active := d.state("c"); n != 1 || !active {
		t.Errorf("driver subscribed %d times (active %v), want once (true)", n, active)
	}
	p.Publish(ctx, "c", []byte("m"))
	if got := recvData(t, sub); got != "m" {
		t.Errorf("got %q", got)
	}
}
