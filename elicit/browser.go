package elicit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/elicitvault/elicitvault/internal/engine"
	"sync"
	"time"

	"github.com/elicitvault/elicitvault/elicit/internal/browserform"
	"github.com/google/jsonschema-go/jsonschema"
)

// browserServer is the BrowserForm fallback's server, started on first
// use.
type browserServer struct {
	mu     sync.Mutex
	s      *browserform.Server
	closed bool
}

var errClosed = errors.New("elicit: Elicitor closed")

func (b *browserServer) get() (*browserform.Server, error) {
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
	return b.s, nil
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

// logger names the Elicitor's log messages to the client.
const logger = "elicitvault"

// viaBrowser is the BrowserForm fallback's request flow: it opens the form
// on the local server, tells the user where it is and waits for the answer,
// the TTL, a newer elicitation in the session, or ctx. The form validates
// with the elicitation's schema (the user may correct an answer there);
// the result flow validates again.
func (pa *browserPath) viaBrowser(ctx context.Context, r *Request, ttl time.Duration) (*Response, error) {
	e := pa.e
	srv, err := e.browser.get()
	if err != nil {
		return nil, err
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(r.Schema.raw, &js); err != nil {
		return nil, fmt.Errorf("elicit: %w", err)
	}
	js.PropertyOrder = r.Schema.Fields()

	// The form is pending like any other elicitation: sealed in the
	// store, the session's one pending elicitation.
	call := r.Call
	expiry := e.engine.Now().Add(ttl)
	s := e.engine.Slot(call.who, r.ID, expiry)
	first, err := e.begin(ctx, s, &pendingRecord{Mode: ModeForm, Via: viaBrowser, Schema: r.Schema.raw, Tool: call.Tool, Expiry: expiry.UnixMilli()})
	if err != nil {
		return nil, err
	}
	defer s.End(ctx)
	sub := &engine.Subscription{Subscription: first}
	defer func() { sub.Close() }()

	wctx, cancel := context.WithTimeout(ctx, ttl)
	defer cancel()
	p, err := srv.Open(wctx, browserform.Form{
		Message: r.Message,
		Schema:  &js,
		Validate: func(content map[string]any) error {
			_, err := r.Schema.Validate(content)
			return err
		},
		TTL: ttl,
	})
	if err != nil {
		return nil, fmt.Errorf("elicit: browser form: %w", err)
	}
	defer p.Cancel()
	e.browse.announce(ctx, call, r.Message, p.URL, p.Code)

	type answer struct {
		res browserform.Result
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		res, err := p.Wait(wctx)
		answers <- answer{res, err}
	}()
	defer func() {
		cancel()
		if answers != nil {
			<-answers
		}
	}()
	for {
		select {
		case a := <-answers:
			answers = nil
			switch {
			case errors.Is(a.err, browserform.ErrTimeout):
				return nil, ErrTimeout
			case a.err != nil:
				return nil, engine.WaitErr(ctx)
			}
			return &Response{Action: Action(a.res.Action), Content: a.res.Content}, nil
		case _, ok := <-sub.Messages():
			if !ok {
				if err := s.Resubscribe(ctx, wctx, sub); err != nil {
					return nil, err
				}
			}
			if _, done, err := readResult(ctx, s); done {
				// Only a newer elicitation writes here.
				if err == nil {
					err = ErrReplaced
				}
				return nil, err
			}
		}
	}
}

// urlViaBrowser is URL mode for a client without it, with the BrowserForm
// fallback: the link is announced as a browser form is (never in a tool
// result: it carries the callback token), and the call waits for the
// user's answer on the page, the TTL, a newer elicitation in the session,
// or ctx.
func (pa *browserPath) urlViaBrowser(ctx context.Context, r *Request, ttl time.Duration, o *options) (*Response, error) {
	e := pa.e
	link, err := e.issueURL(r, ttl, o)
	if err != nil {
		return nil, err
	}
	call := r.Call
	expiry := e.engine.Now().Add(ttl)
	s := e.engine.Slot(call.who, r.ID, expiry)
	first, err := e.begin(ctx, s, &pendingRecord{Mode: ModeURL, Via: viaBrowser, Tool: call.Tool, Expiry: expiry.UnixMilli()})
	if err != nil {
		return nil, err
	}
	defer s.End(ctx)
	sub := &engine.Subscription{Subscription: first}
	defer func() { sub.Close() }()
	e.browse.announce(ctx, call, r.Message, link, "")
	res, err := await(ctx, expiry, s, sub)
	if err == nil {
		s.Taken(ctx) // the page that wrote it may say so
	}
	return res, err
}

// announce tells the user where the form of a BrowserForm elicitation is
// and which verification code it shows (none for a URL-mode page): as a
// log message at level notice,
// and as a progress notification when the call has a progress token; and
// it gives the page to Config.OpenBrowser. Best effort: the form waits
// anyway. The URL goes only to these channels of the client and never into
// a tool result, which the model reads, because it carries the form's
// nonce.
func (pa *browserPath) announce(ctx context.Context, c *Call, message, url, code string) {
	e := pa.e
	text := fmt.Sprintf("%s\nAnswer in your browser at %s and check that the page shows the verification code %s.", message, url, code)
	if code == "" { // the page of a URL-mode elicitation
		text = fmt.Sprintf("%s\nContinue in your browser at %s", message, url)
	}
	ctx = context.WithoutCancel(ctx)
	c.peer.Log(ctx, "notice", logger, text)
	if c.info.ProgressToken != nil {
		c.peer.Progress(ctx, 0, text)
	}
	if e.openBrowser != nil {
		e.openBrowser(ctx, url)
	}
}

// browserPath is the BrowserForm fallback: a form, or the URL-mode page,
// announced to the user outside the model.
type browserPath struct{ e *Elicitor }

func (pa *browserPath) deliver(ctx context.Context, _ *round, r *Request, ttl time.Duration, o *options) (*Response, error) {
	if r.Mode == ModeURL {
		return pa.urlViaBrowser(ctx, r, ttl, o)
	}
	return pa.viaBrowser(ctx, r, ttl)
}
