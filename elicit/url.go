package elicit

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/oneshot"
	"github.com/elicitvault/elicitvault/internal/token"
	"github.com/elicitvault/elicitvault/store"
)

// URL asks the user to visit a page of the server (URL mode): to sign in to
// a third party, enter a secret, or consent, without the value ever
// passing through the MCP client. The link goes to the built-in consent
// page under Config.BaseURL (see Handler and Pages), or to a page of yours
// with WithLink; when the user is done there, the elicitation completes on
// this node or any other that shares the store, URL sends
// notifications/elicitation/complete and returns the user's choice:
// Accept, or Decline when they refused on the page.
//
// The link carries a callback token: opaque (sealed, 128 bits of ID, no
// PII), single-use, bound to the session and the user, and valid for the
// elicitation's TTL.
//
// Decline and Cancel are also the user's refusal to open the page. The
// waiting, TTL, cancellation and protocol rules are those of Form; on
// 2026-07-28 the handler runs again once the user opened the page, and URL
// waits there for the page, in retries of at most Config.URLRoundWait. With WithURLElicitationRequiredError (before
// 2026-07-28) URL does not wait: it returns an error for the handler to
// return, which becomes the protocol error -32042; when the page completes
// the client is notified, retries the call, and this time URL returns the
// user's choice.
func URL(ctx context.Context, message string, opts ...Option) (Action, error) {
	o := collect(opts)
	e, err := fromContext(ctx)
	if err != nil {
		return "", err
	}
	if o.link == nil {
		if e.baseURL == "" {
			return "", errors.New("elicit: URL needs Config.BaseURL (the address of the consent page) or WithLink")
		}
		o.link = defaultLink(e.baseURL)
	}
	res, err := e.ask(ctx, &Request{Mode: ModeURL, Message: message}, o)
	if err != nil {
		return "", err
	}
	return res.Action, nil
}

// errGone is what ResolveURL returns for an elicitation that is no longer
// pending: it matches ErrUnknownElicitation and token.ErrExpired (the
// callback page then says the link expired).
var errGone error = &goneError{}

type goneError struct{}

func (*goneError) Error() string { return ErrUnknownElicitation.Error() }
func (*goneError) Is(target error) bool {
	return target == ErrUnknownElicitation || target == token.ErrExpired
}

// resolveURL completes the URL-mode elicitation a verified, consumed
// callback token names. It checks the sealed pending record (which only
// opens for the token's subject and session), writes the result to the
// store and announces it. An elicitation whose call was not waiting
// (-32042) gets its answer written where the retry of the call looks for
// it, by this page, so that no waiter is needed; one handed to the model
// keeps it for the model's sendElicitationResult.
func (e *Elicitor) resolveURL(ctx context.Context, c *token.Claims, action Action) error {
	_, _, err := e.resolveURLUntil(ctx, c, action)
	return err
}

// resolveURLUntil is resolveURL that also returns the elicitation's
// expiry, until which its answer waits for the call to take it, and
// whether a call may take it now (false when the model brings it).
func (e *Elicitor) resolveURLUntil(ctx context.Context, c *token.Claims, action Action) (_ time.Time, waited bool, err error) {
	s := e.engine.Slot(engine.ClaimsIdentity(c), c.ElicitationID, time.Time{})
	var rec pendingRecord
	if err := s.Get(ctx, engine.PurposePending, &rec); err != nil {
		if errors.Is(err, ErrUnknownElicitation) {
			return time.Time{}, false, errGone
		}
		return time.Time{}, false, err
	}
	ctx, end := resume(ctx, e.hooks, rec.Mode, rec.Carried)
	defer func() { end(err) }()
	if rec.Mode != ModeURL {
		return time.Time{}, false, errGone
	}
	s.Expiry = time.UnixMilli(rec.Expiry)
	if !s.Expiry.After(e.engine.Now()) {
		return time.Time{}, false, errGone
	}
	res := &resultRecord{Action: string(action)}
	if rec.Done != "" {
		done := e.engine.Slot(engine.ClaimsIdentity(c), "done:"+rec.Done, s.Expiry)
		if err := done.Put(ctx, engine.PurposeResult, &resultRecord{Action: string(action), ID: c.ElicitationID, Expiry: rec.Expiry}); err != nil {
			return time.Time{}, false, err
		}
	}
	return s.Expiry, rec.Via != engine.ViaModel, s.Resolve(ctx, res)
}

// issueURL issues the callback token of r and returns the link to send.
func (e *Elicitor) issueURL(r *Request, ttl time.Duration, o *options) (string, error) {
	if ttl < time.Second {
		ttl = time.Second
	}
	tok, err := e.tokens.Issue(&token.Claims{
		Kind:          token.URL,
		SessionID:     r.Call.who.Session,
		Subject:       r.Call.who.Subject,
		ElicitationID: r.ID,
	}, ttl.Round(time.Second), token.Compact)
	if err != nil {
		return "", fmt.Errorf("elicit: %w", err)
	}
	return o.link(tok), nil
}

// notifyComplete sends notifications/elicitation/complete, best effort.
// With the context of a tool call in progress, it goes to the client with
// that call's messages (its stream, on Streamable HTTP).
func notifyComplete(ctx context.Context, p engine.Peer, id string) {
	p.NotifyComplete(context.WithoutCancel(ctx), id)
}

// notifyCompleteLater is notifyComplete after the tool call ended (the
// -32042 watcher). Its context must not be the call's: the go-sdk would
// send it on the call's stream, closed by now, and drop it; a fresh
// context sends it on the session's standalone stream.
func notifyCompleteLater(p engine.Peer, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.NotifyComplete(ctx, id)
}

// urlRequiredError is what URL returns with WithURLElicitationRequiredError:
// the handler returns it, and the installed middleware answers the call
// with the protocol error -32042 carrying the elicitation. It matches
// ErrInputRequired, which is the rule the handler follows: return it
// unchanged.
type urlRequiredError struct {
	params *engine.ElicitParams
}

func (e *urlRequiredError) Error() string {
	return "elicit: URL elicitation required (the client retries the call once it completes)"
}

func (e *urlRequiredError) Is(target error) bool { return target == ErrInputRequired }

// urlFingerprint identifies a URL elicitation across the retries of a
// call: the tool, its arguments and the message.
func urlFingerprint(r *Request) string {
	args, _ := token.HashArgs(r.Call.info.Arguments)
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s%d:%s", len(r.Call.Tool), r.Call.Tool, len(r.Message), r.Message)
	h.Write(args[:])
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}

// urlRequired is the request flow of WithURLElicitationRequiredError. If
// the elicitation of an earlier try of this call completed, it is the
// answer; otherwise a new one is registered, a watcher waits for its
// callback in the background to notify the client, and the call fails with
// a *urlRequiredError.
func (pa *urlRequiredPath) urlRequired(ctx context.Context, r *Request, ttl time.Duration, o *options) (*Response, error) {
	e := pa.e
	call := r.Call
	fp := urlFingerprint(r)
	if res, err := e.urlReq.takeDone(ctx, call, fp); res != nil || err != nil {
		return res, err
	}

	expiry := e.engine.Now().Add(ttl)
	s := e.engine.Slot(call.who, r.ID, expiry)
	link, err := e.issueURL(r, ttl, o)
	if err != nil {
		return nil, err
	}
	first, err := e.begin(ctx, s, &pendingRecord{Mode: ModeURL, Tool: call.Tool, Expiry: expiry.UnixMilli(), Done: fp})
	if err != nil {
		return nil, err
	}
	peer := call.peer
	go func() {
		wctx := context.WithoutCancel(ctx)
		defer s.End(wctx)
		sub := &engine.Subscription{Subscription: first}
		defer func() { sub.Close() }()
		// The page wrote the answer for the retry; this only tells the
		// client to retry, whatever the user chose there. An answer handed
		// to this call after the store lost the records (the page wrote
		// nothing) is written for the retry here, as the page would have.
		res, err := await(wctx, expiry, s, sub)
		if err == nil && res.handed {
			done := e.engine.Slot(call.who, "done:"+fp, expiry)
			err = done.Put(wctx, engine.PurposeResult, &resultRecord{Action: string(res.Action), ID: r.ID, Expiry: expiry.UnixMilli()})
		}
		if err == nil {
			notifyCompleteLater(peer, r.ID)
		}
	}()
	return nil, &urlRequiredError{params: &engine.ElicitParams{Mode: string(ModeURL), Message: r.Message, URL: link, ElicitationID: r.ID}}
}

// takeDone returns the answer a page left for a retry of the call
// fingerprinted fp, used up, or nil when there is none to use. Nothing is
// consumed before the claim (issue 26): the answer is read, its one-shot
// marker claimed and committed, the tool continues right after, and the
// answer is removed meanwhile, in the background. A read or a claim whose
// reply is lost, or a node that dies before the commit, leaves it for the
// next retry.
func (pa *urlRequiredPath) takeDone(ctx context.Context, call *Call, fp string) (*Response, error) {
	e := pa.e
	done := e.engine.Slot(call.who, "done:"+fp, time.Time{})
	b := done.Binding(engine.PurposeResult)
	var dr resultRecord
	var key string
	var sealed []byte
	for _, k := range e.keys.StoreKeys(b) {
		v, err := e.store.Get(ctx, k)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, &engine.StoreError{Err: err}
		}
		if pt, err := e.keys.OpenRecord(b, v); err == nil && json.Unmarshal(pt, &dr) == nil {
			key, sealed = k, v
			break
		}
	}
	if sealed == nil || dr.ID == "" || !time.UnixMilli(dr.Expiry).After(e.engine.Now()) {
		return nil, nil
	}
	// The marker is the answered elicitation's: a later elicitation with
	// the same fingerprint has a marker of its own.
	m := e.engine.Slot(call.who, "done:"+fp+"/"+dr.ID, time.UnixMilli(dr.Expiry))
	use, err := oneshot.Claim(ctx, e.store, m.Key(engine.PurposeUsed), []byte{1}, oneshot.Options{Lease: e.model.lease(), Expiry: m.Expiry, Now: e.engine.Now})
	switch {
	case errors.Is(err, oneshot.ErrUsed), errors.Is(err, store.ErrInvalidArgument):
		return nil, nil // used by an earlier retry, or expired: ask again
	case errors.Is(err, oneshot.ErrBusy):
		return nil, errAnswerInProgress
	case err != nil:
		return nil, fmt.Errorf("elicit: store: %w", err)
	}
	if err := use.Commit(ctx); err != nil {
		use.Release(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("elicit: store: %w", err)
	}
	e.engine.Slot(call.who, dr.ID, time.Time{}).Taken(ctx) // for the page, if it still waits
	go func() {
		// Only this answer: a newer one under the same key stays.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		e.store.CompareAndSwap(ctx, key, sealed, nil, m.Expiry)
	}()
	return &Response{Action: Action(dr.Action)}, nil
}

// urlRequiredPath is URL mode with WithURLElicitationRequiredError: the
// call fails with -32042, and its retry finds the page's answer.
type urlRequiredPath struct{ e *Elicitor }

func (pa *urlRequiredPath) deliver(ctx context.Context, _ *round, r *Request, ttl time.Duration, o *options) (*Response, error) {
	return pa.urlRequired(ctx, r, ttl, o)
}
