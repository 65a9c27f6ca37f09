package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
)

// refusingDriver fails the test on every call but Close, and fails every
// call with failure when set.
type refusingDriver struct {
	t       *testing.T
	failure error
	closed  int
}

func (d *refusingDriver) call() error {
	if d.failure == nil {
		d.t.Helper()
		d.t.Error("the Portable called its driver")
	}
	return d.failure
}

func (d *refusingDriver) Put(context.Context, string, []byte, time.Time) error { return d.call() }
func (d *refusingDriver) Get(context.Context, string) ([]byte, error)          { return nil, d.call() }
func (d *refusingDriver) Take(context.Context, string) ([]byte, error)         { return nil, d.call() }
func (d *refusingDriver) PutIfAbsent(context.Context, string, []byte, time.Time) (bool, error) {
	return false, d.call()
}
func (d *refusingDriver) PutIfAbsentGet(context.Context, string, []byte, time.Time, string) (bool, []byte, error) {
	return false, nil, d.call()
}
func (d *refusingDriver) Swap(context.Context, string, []byte, time.Time) ([]byte, error) {
	return nil, d.call()
}
func (d *refusingDriver) CompareAndSwap(context.Context, string, []byte, []byte, time.Time) (bool, error) {
	return false, d.call()
}
func (d *refusingDriver) Delete(context.Context, string) error { return d.call() }
func (d *refusingDriver) Scan(context.Context, string, int) ([]store.Entry, string, error) {
	return nil, "", d.call()
}
func (d *refusingDriver) Publish(context.Context, string, []byte) error { return d.call() }
func (d *refusingDriver) Subscribe(context.Context, string, func(store.Message)) (func(), error) {
	return nil, d.call()
}
func (d *refusingDriver) Close() error { d.closed++; return nil }

// ops calls every operation of s with the given arguments and returns
// each one's error by the operation's name in errors.
func ops(s store.Store, key, channel string, value []byte, expiry time.Time, count int) map[string]error {
	ctx := context.Background()
	errs := map[string]error{}
	errs["put"] = s.Put(ctx, key, value, expiry)
	_, errs["get"] = s.Get(ctx, key)
	_, errs["take"] = s.Take(ctx, key)
	_, errs["put if absent"] = s.PutIfAbsent(ctx, key, value, expiry)
	if p, ok := s.(interface {
		PutIfAbsentGet(context.Context, string, []byte, time.Time, string) (bool, []byte, error)
	}); ok {
		_, _, errs["put if absent and get"] = p.PutIfAbsentGet(ctx, key, value, expiry, key)
	}
	_, errs["swap"] = s.Swap(ctx, key, value, expiry)
	_, errs["compare and swap"] = s.CompareAndSwap(ctx, key, value, value, expiry)
	errs["delete"] = s.Delete(ctx, key)
	_, _, errs["scan"] = s.Scan(ctx, "", count)
	errs["publish"] = s.Publish(ctx, channel, value)
	_, errs["subscribe"] = s.Subscribe(ctx, channel)
	return errs
}

// TestPortableChecksBeforeTheDriver holds that bad arguments never reach a
// driver, and that each error names the backend and the operation.
func TestPortableChecksBeforeTheDriver(t *testing.T) {
	t.Parallel()
	p := store.New("test", &refusingDriver{t: t}, nil)
	defer p.Close()
	for op, err := range ops(p, "", "", nil, time.Now().Add(-time.Second), 0) {
		if !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", op, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "test: "+op+": ") {
			t.Errorf("%s: %q does not start with the backend's and the operation's names", op, err)
		}
	}
}

// TestPortableClosed holds that after Close no operation reaches the
// driver, each returns ErrClosed, and the driver is closed once.
func TestPortableClosed(t *testing.T) {
	t.Parallel()
	d := &refusingDriver{t: t}
	p := store.New("test", d, nil)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); !errors.Is(err, store.ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
	if d.closed != 1 {
		t.Errorf("the driver was closed %d times, want once", d.closed)
	}
	for op, err := range ops(p, "k", "c", []byte("v"), time.Now().Add(time.Minute), 1) {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", op, err)
		}
	}
}

// TestPortableWrapsDriverErrors holds that a driver's error comes back
// under the operation's name and still matches with errors.Is, and that
// ErrNotFound comes back bare.
func TestPortableWrapsDriverErrors(t *testing.T) {
	t.Parallel()
	failure := errors.New("connection reset")
	p := store.New("test", &refusingDriver{t: t, failure: failure}, nil)
	defer p.Close()
	for op, err := range ops(p, "k", "c", []byte("v"), time.Now().Add(time.Minute), 1) {
		if !errors.Is(err, failure) || err.Error() != "test: "+op+": connection reset" {
			t.Errorf("%s: %v, want the driver's error under the operation's name", op, err)
		}
	}
	p = store.New("test", &refusingDriver{t: t, failure: store.ErrNotFound}, nil)
	defer p.Close()
	if _, err := p.Get(t.Context(), "k"); err != store.ErrNotFound {
		t.Errorf("Get: %v, want ErrNotFound itself", err)
	}
}
