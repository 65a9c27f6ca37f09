package elicit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/elicitvault/elicitvault/elicit/internal/browserform"
	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/google/jsonschema-go/jsonschema"
)

// The BrowserForm fallback is the engine's (internal/engine/browser.go);
// its forms are served here, on 127.0.0.1 (package browserform).

// browserServer is the BrowserForm fallback's server, started on first
// use.
type browserServer struct {
	mu     sync.Mutex
	s      *browserform.Server
	closed bool
}

var errClosed = errors.New("elicit: Elicitor closed")

// forms returns the server (engine.Config.Forms).
func (b *browserServer) forms() (engine.FormServer, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, errClosed
	}
	if b.s == nil {
		s, err := browserform.Listen()
		if err != nil {
			return nil, fmt.Errorf("elicit: browser form: %w", err)
		}
		b.s = s
	}
	return formServer{b.s}, nil
}

func (b *browserServer) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.s == nil {
		return nil
	}
	return b.s.Close()
}

// formServer serves the form of an elicitation (engine.FormServer): it
// validates with the elicitation's schema, and the user may correct an
// answer there.
type formServer struct{ s *browserform.Server }

func (f formServer) Open(ctx context.Context, q *engine.Ask) (engine.LocalForm, error) {
	s, err := ParseSchema(q.Schema) // the schema it was asked with, canonical
	if err != nil {
		return nil, err
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(q.Schema, &js); err != nil {
		return nil, err
	}
	js.PropertyOrder = s.Fields()
	validate := func(content map[string]any) error {
		_, err := s.Validate(content)
		return err
	}
	p, err := f.s.Open(ctx, browserform.Form{Message: q.Message, Schema: &js, Validate: validate, TTL: q.TTL})
	if err != nil {
		return nil, err
	}
	return localForm{p}, nil
}

// localForm is an open form (engine.LocalForm).
type localForm struct{ p *browserform.Pending }

func (f localForm) URL() string  { return f.p.URL }
func (f localForm) Code() string { return f.p.Code }
func (f localForm) Cancel()      { f.p.Cancel() }

func (f localForm) Wait(ctx context.Context) (*engine.Response, error) {
	res, err := f.p.Wait(ctx)
	switch {
	case errors.Is(err, browserform.ErrTimeout):
		return nil, engine.ErrTimeout
	case err != nil:
		return nil, err
	}
	return &engine.Response{Action: string(res.Action), Content: res.Content}, nil
}
