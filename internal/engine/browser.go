package engine

import (
	"context"
	"errors"
	"fmt"
)

// FormServer serves the forms of the BrowserForm fallback on this
// machine (Config.Forms).
type FormServer interface {
	// Open serves the form of q until ctx ends.
	Open(ctx context.Context, q *Ask) (LocalForm, error)
}

// LocalForm is the form of a BrowserForm elicitation, served on this
// machine by the front-end's FormServer.
type LocalForm interface {
	// URL is the page of the form, and Code the verification code it
	// shows.
	URL() string
	Code() string
	// Wait waits for the user's answer, validated on the page, or the
	// form's TTL (ErrTimeout), or ctx.
	Wait(ctx context.Context) (*Response, error)
	// Cancel takes the form down.
	Cancel()
}

// logger names the engine's log messages to the client.
const logger = "elicitvault"

// browserPath is the BrowserForm fallback: a form, or the URL-mode page,
// announced to the user outside the model.
type browserPath struct{ e *Engine }

func (pa browserPath) deliver(ctx context.Context, _ *round, q *Ask) (*Response, error) {
	if q.Mode == ModeURL {
		return pa.urlViaBrowser(ctx, q)
	}
	return pa.viaBrowser(ctx, q)
}

// canAnnounce reports whether the user of a call can be told where a
// browser form is.
func (pa browserPath) canAnnounce(info *CallInfo) bool {
	if pa.e.cfg.OpenBrowser != nil || info.ProgressToken != nil {
		return true
	}
	switch info.LogLevel {
	case "debug", "info", "notice":
		return true
	}
	return false
}

// viaBrowser is the BrowserForm fallback's request flow: it opens the form
// on the local server, tells the user where it is and waits for the answer,
// the TTL, a newer elicitation in the session, or ctx. The form validates
// with the elicitation's schema (the user may correct an answer there);
// the result flow validates again.
func (pa browserPath) viaBrowser(ctx context.Context, q *Ask) (*Response, error) {
	e := pa.e
	if e.cfg.Forms == nil {
		return nil, errors.New("elicit: browser form: no form server")
	}
	srv, err := e.cfg.Forms()
	if err != nil {
		return nil, err
	}
	// The form is pending like any other elicitation: sealed in the
	// store, the session's one pending elicitation.
	expiry := e.Now().Add(q.TTL)
	s := e.Slot(q.info.Who, q.ID, expiry)
	first, err := beginPending(ctx, e, s, &pendingRecord{Mode: ModeForm, Via: viaBrowser, Schema: q.Schema, Tool: q.info.Tool, Expiry: expiry.UnixMilli()})
	if err != nil {
		return nil, err
	}
	defer s.End(ctx)
	sub := &Subscription{Subscription: first}
	defer func() { sub.Close() }()

	wctx, cancel := context.WithTimeout(ctx, q.TTL)
	defer cancel()
	f, err := srv.Open(wctx, q)
	if err != nil {
		return nil, fmt.Errorf("elicit: browser form: %w", err)
	}
	defer f.Cancel()
	pa.announce(ctx, q, f.URL(), f.Code())

	type answer struct {
		res *Response
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		res, err := f.Wait(wctx)
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
			case errors.Is(a.err, ErrTimeout):
				return nil, ErrTimeout
			case a.err != nil:
				return nil, WaitErr(ctx)
			}
			return a.res, nil
		case _, ok := <-sub.Messages():
			if !ok {
				if err := s.Resubscribe(ctx, wctx, sub); err != nil {
					return nil, err
				}
			}
			if _, done, err := readResult(ctx, s); done {
				// Only a newer elicitation writes here.
				if err == nil {
					err = ErrCancelled
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
func (pa browserPath) urlViaBrowser(ctx context.Context, q *Ask) (*Response, error) {
	e := pa.e
	link, err := issueURL(e, q)
	if err != nil {
		return nil, err
	}
	expiry := e.Now().Add(q.TTL)
	s := e.Slot(q.info.Who, q.ID, expiry)
	rec := urlPending(e, q, expiry)
	rec.Via = viaBrowser
	first, err := beginPending(ctx, e, s, rec)
	if err != nil {
		return nil, err
	}
	defer s.End(ctx)
	sub := &Subscription{Subscription: first}
	defer func() { sub.Close() }()
	pa.announce(ctx, q, link, "")
	res, err := await(ctx, expiry, s, sub)
	if err == nil {
		s.Taken(ctx) // the page that wrote it may say so
	}
	return res, err
}

// announce tells the user where the form of a BrowserForm elicitation is
// and which verification code it shows (none for a URL-mode page): as a
// log message at level notice, and as a progress notification when the
// call has a progress token; and it gives the page to Config.OpenBrowser.
// Best effort: the form waits anyway. The URL goes only to these channels
// of the client and never into a tool result, which the model reads,
// because it carries the form's nonce.
func (pa browserPath) announce(ctx context.Context, q *Ask, url, code string) {
	text := fmt.Sprintf("%s\nAnswer in your browser at %s and check that the page shows the verification code %s.", q.Message, url, code)
	if code == "" { // the page of a URL-mode elicitation
		text = fmt.Sprintf("%s\nContinue in your browser at %s", q.Message, url)
	}
	ctx = context.WithoutCancel(ctx)
	q.peer.Log(ctx, "notice", logger, text)
	if q.info.ProgressToken != nil {
		q.peer.Progress(ctx, 0, text)
	}
	if open := pa.e.cfg.OpenBrowser; open != nil {
		open(ctx, url)
	}
}
