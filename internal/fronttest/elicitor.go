package fronttest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/keyring"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
)

// NewElicitor returns an Elicitor with cfg on st, or on a new memory store
// when st is nil, with the keys of a fixed test secret. Both are closed
// when the test ends (closing the Elicitor again is harmless).
func NewElicitor(t testing.TB, st store.Store, cfg *elicit.Config) *elicit.Elicitor {
	t.Helper()
	keys, err := keyring.New([]byte("test secret that is at least 32 bytes long"))
	if err != nil {
		t.Fatal(err)
	}
	if st == nil {
		mem := memory.New(nil)
		t.Cleanup(func() { mem.Close() })
		st = mem
	}
	ev, err := elicit.New(keys, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ev.Close() })
	return ev
}

// NewPagedElicitor is NewElicitor on a new memory store, with its pages
// (URL mode, browser forms) served by an httptest server that is closed
// when the test ends; cfg's BaseURL is replaced by that server's URL (cfg
// itself is not changed).
func NewPagedElicitor(t testing.TB, cfg *elicit.Config) *elicit.Elicitor {
	t.Helper()
	mux := http.NewServeMux()
	pages := httptest.NewServer(mux)
	t.Cleanup(pages.Close)
	var c elicit.Config
	if cfg != nil {
		c = *cfg
	}
	c.BaseURL = pages.URL
	ev := NewElicitor(t, nil, &c)
	mux.Handle(elicit.PagesPrefix, ev.Pages(nil))
	return ev
}
