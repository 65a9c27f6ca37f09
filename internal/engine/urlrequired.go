package engine

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/elicitvault/elicitvault/internal/oneshot"
	"github.com/elicitvault/elicitvault/internal/token"
	"github.com/elicitvault/elicitvault/store"
)

// URLRequiredError is what URL returns with WithURLElicitationRequiredError:
// the handler returns it, and the installed middleware answers the call
// with the protocol error -32042 carrying the elicitation. It matches
// ErrInputRequired: the handler's rule is the same, return it unchanged.
type URLRequiredError struct {
	params *ElicitParams
}

func (e *URLRequiredError) Error() string {
	return "elicit: URL elicitation required (the client retries the call once it completes)"
}

// Is makes the error match ErrInputRequired.
func (e *URLRequiredError) Is(target error) bool { return target == ErrInputRequired }

// urlRequiredPath is URL mode with WithURLElicitationRequiredError: the
// call fails with -32042, and its retry finds the page's answer.
type urlRequiredPath struct{ e *Engine }

func (pa urlRequiredPath) deliver(ctx context.Context, _ *round, q *Ask) (*Response, error) {
	return pa.urlRequired(ctx, q)
}

// urlFingerprint identifies a URL elicitation across the retries of a
// call: the tool, its arguments and the message.
func urlFingerprint(q *Ask) string {
	args, _ := token.HashArgs(q.info.Arguments)
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s%d:%s", len(q.info.Tool), q.info.Tool, len(q.Message), q.Message)
	h.Write(args[:])
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}

// urlRequired is the request flow of WithURLElicitationRequiredError. If
// the elicitation of an earlier try of this call completed, it is the
// answer; otherwise a new one is registered, a watcher waits for its
// callback in the background to notify the client, and the call fails with
// a *URLRequiredError.
func (pa urlRequiredPath) urlRequired(ctx context.Context, q *Ask) (*Response, error) {
	e := pa.e
	who := q.info.Who
	fp := urlFingerprint(q)
	if res, err := pa.takeDone(ctx, who, fp); res != nil || err != nil {
		return res, err
	}

	expiry := e.Now().Add(q.TTL)
	s := e.Slot(who, q.ID, expiry)
	link, err := issueURL(e, q)
	if err != nil {
		return nil, err
	}
	rec := urlPending(e, q, expiry)
	rec.Done = fp
	first, err := beginPending(ctx, e, s, rec)
	if err != nil {
		return nil, err
	}
	peer, id := q.peer, q.ID
	go func() {
		wctx := context.WithoutCancel(ctx)
		defer s.End(wctx)
		sub := &Subscription{Subscription: first}
		defer func() { sub.Close() }()
		// The page wrote the answer for the retry; this only tells the
		// client to retry, whatever the user chose there. An answer handed
		// to this call after the store lost the records (the page wrote
		// nothing) is written for the retry here, as the page would have.
		res, err := await(wctx, expiry, s, sub)
		if err == nil && res.Handed {
			done := e.Slot(who, "done:"+fp, expiry)
			err = done.Put(wctx, PurposeResult, &Result{Action: res.Action, ID: id, Expiry: expiry.UnixMilli()})
		}
		if err == nil {
			notifyCompleteLater(peer, id)
		}
	}()
	return nil, &URLRequiredError{params: &ElicitParams{Mode: ModeURL, Message: q.Message, URL: link, ElicitationID: id}}
}

// takeDone returns the answer a page left for a retry of the call
// fingerprinted fp, used up, or nil when there is none to use. Nothing is
// consumed before the claim (issue 26): the answer is read, its one-shot
// marker claimed and committed, the tool continues right after, and the
// answer is removed meanwhile, in the background. A read or a claim whose
// reply is lost, or a node that dies before the commit, leaves it for the
// next retry.
func (pa urlRequiredPath) takeDone(ctx context.Context, who Identity, fp string) (*Response, error) {
	e := pa.e
	done := e.Slot(who, "done:"+fp, time.Time{})
	b := done.Binding(PurposeResult)
	var dr Result
	var key string
	var sealed []byte
	for _, k := range e.keys.StoreKeys(b) {
		v, err := e.store.Get(ctx, k)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, &StoreError{Err: err}
		}
		if pt, err := e.keys.OpenRecord(b, v); err == nil && json.Unmarshal(pt, &dr) == nil {
			key, sealed = k, v
			break
		}
	}
	if sealed == nil || dr.ID == "" || !time.UnixMilli(dr.Expiry).After(e.Now()) {
		return nil, nil
	}
	// The marker is the answered elicitation's: a later elicitation with
	// the same fingerprint has a marker of its own.
	m := e.Slot(who, "done:"+fp+"/"+dr.ID, time.UnixMilli(dr.Expiry))
	use, err := oneshot.Claim(ctx, e.store, m.Key(PurposeUsed), []byte{1}, oneshot.Options{Lease: e.cfg.lease(), Expiry: m.Expiry, Now: e.Now})
	switch {
	case errors.Is(err, oneshot.ErrUsed), errors.Is(err, store.ErrInvalidArgument):
		return nil, nil // used by an earlier retry, or expired: ask again
	case errors.Is(err, oneshot.ErrBusy):
		return nil, ErrAnswerInProgress
	case err != nil:
		return nil, fmt.Errorf("elicit: store: %w", err)
	}
	if err := use.Commit(ctx); err != nil {
		use.Release(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("elicit: store: %w", err)
	}
	e.Slot(who, dr.ID, time.Time{}).Taken(ctx) // for the page, if it still waits
	go func() {
		// Only this answer: a newer one under the same key stays.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		e.store.CompareAndSwap(ctx, key, sealed, nil, m.Expiry)
	}()
	return &Response{Action: dr.Action}, nil
}

// ErrGone is what ResolveURL returns for an elicitation that is no longer
// pending: it matches ErrUnknownElicitation and token.ErrExpired (the
// callback page then says the link expired).
var ErrGone error = &goneError{}

type goneError struct{}

func (*goneError) Error() string { return ErrUnknownElicitation.Error() }
func (*goneError) Is(target error) bool {
	return target == ErrUnknownElicitation || target == token.ErrExpired
}

// ResolveURL completes the URL-mode elicitation that verified, consumed
// claims c name, with action, whichever node asked it. It checks the
// sealed pending record (which only opens for the token's subject and
// session), writes the result to the store and announces it. An
// elicitation whose call was not waiting (-32042) gets its answer written
// where the retry of the call looks for it, by this page, so that no
// waiter is needed; one handed to the model keeps it for the model's
// FallbackTool. It returns the elicitation's expiry, until which its
// answer waits for the call to take it, and whether a call may take it
// now (false when the model brings it). One that is no longer pending is
// an error matching ErrUnknownElicitation and token.ErrExpired. The
// front-end's pages call it, and callbacks that are not theirs
// (elicit/oauth's); action is Accept, Decline or Cancel.
func (e *Engine) ResolveURL(ctx context.Context, c *token.Claims, action string) (_ time.Time, waited bool, err error) {
	switch action {
	case Accept, Decline, Cancel:
	default:
		return time.Time{}, false, errors.New("engine: ResolveURL needs accept, decline or cancel")
	}
	s := e.Slot(ClaimsIdentity(c), c.ElicitationID, time.Time{})
	var rec pendingRecord
	if err := s.Get(ctx, PurposePending, &rec); err != nil {
		if errors.Is(err, ErrUnknownElicitation) {
			return time.Time{}, false, ErrGone
		}
		return time.Time{}, false, err
	}
	ctx, end := e.cfg.resume(ctx, rec.Mode, rec.Carried)
	defer func() { end(err) }()
	if rec.Mode != ModeURL {
		return time.Time{}, false, ErrGone
	}
	s.Expiry = time.UnixMilli(rec.Expiry)
	if !s.Expiry.After(e.Now()) {
		return time.Time{}, false, ErrGone
	}
	res := &Result{Action: action}
	if rec.Done != "" {
		done := e.Slot(ClaimsIdentity(c), "done:"+rec.Done, s.Expiry)
		if err := done.Put(ctx, PurposeResult, &Result{Action: action, ID: c.ElicitationID, Expiry: rec.Expiry}); err != nil {
			return time.Time{}, false, err
		}
	}
	return s.Expiry, rec.Via != ViaModel, s.Resolve(ctx, res)
}
