package elicit_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
)

// failPut fails the next Put when armed: the answer's write lost to a
// store fault.
type failPut struct {
	store.Store
	armed atomic.Bool
}

func (f *failPut) Put(ctx context.Context, k string, v []byte, e time.Time) error {
	if f.armed.CompareAndSwap(true, false) {
		return errors.New("read tcp: i/o timeout")
	}
	return f.Store.Put(ctx, k, v, e)
}

// A store fault while the consent page completes the elicitation does not
// use the link up: the user submits again and the call gets the answer,
// once; afterwards the link says it was used.
func TestConsentPageStoreFaultKeepsLink(t *testing.T) {
	for _, version := range []string{legacy, "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			st := &failPut{Store: memory.New(nil)}
			t.Cleanup(func() { st.Close() })
			e := newPageEnvOn(t, st, nil)

			var link string
			done := make(chan struct{})
			got := e.call(t, version, func(u string) {
				defer close(done)
				link = u
				st.armed.Store(true)
				if p := fetch(t, "POST", u, url.Values{"action": {"accept"}}, nil); p.status != http.StatusInternalServerError {
					t.Errorf("during the fault: %d %s", p.status, p.title())
				}
				if p := fetch(t, "POST", u, url.Values{"action": {"accept"}}, nil); p.status != http.StatusOK {
					t.Errorf("submitted again: %d %s", p.status, p.title())
				}
			})
			<-done
			if got != "accept" {
				t.Fatalf("the tool got %q", got)
			}
			if p := fetch(t, "POST", link, url.Values{"action": {"accept"}}, nil); p.status != http.StatusGone {
				t.Fatalf("after completion: %d %q", p.status, p.title())
			}
		})
	}
}
