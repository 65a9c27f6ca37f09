package elicit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawCapture receives the client's answer from the sending middleware
// before the go-sdk validates it, so that the result flow validates it
// instead, with errors that name the path and never quote content.
type rawCapture struct {
	res *mcp.ElicitResult
}

type captureKey struct{}

// sending is the Elicitor's sending middleware.
func (e *Elicitor) sending(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if c, ok := ctx.Value(captureKey{}).(*rawCapture); ok && err == nil {
			if r, ok := res.(*mcp.ElicitResult); ok {
				cp := *r
				c.res = &cp
			}
		}
		return res, err
	}
}

// blocking is the request flow of protocols before 2026-07-28: it sends
// elicitation/create and waits for the answer, the TTL, a newer
// elicitation in the session, or ctx. For URL mode the answer that counts
// is the one the callback writes to the store; the client's own reply only
// says whether the user agreed to open the URL.
func (e *Elicitor) blocking(ctx context.Context, r *Request, ttl time.Duration, o *options) (*Response, error) {
	call := r.Call
	expiry := e.now().Add(ttl)
	s := e.slot(call.subject, call.session, r.ID, expiry)
	rec := &pendingRecord{Mode: r.Mode, Tool: call.Tool, Expiry: expiry.UnixMilli()}
	params := &mcp.ElicitParams{Mode: string(r.Mode), Message: r.Message}
	switch r.Mode {
	case ModeForm:
		raw, _ := r.Schema.MarshalJSON()
		rec.Schema = raw
		params.RequestedSchema = json.RawMessage(raw)
	case ModeURL:
		params.URL = o.url
		params.ElicitationID = r.ID
	}

	sub, err := s.begin(ctx, rec)
	if err != nil {
		return nil, err
	}
	defer s.end(ctx)
	defer sub.Close()

	wctx, cancel := context.WithTimeout(ctx, ttl)
	defer cancel()

	type reply struct {
		res *mcp.ElicitResult
		err error
	}
	replies := make(chan reply, 1)
	capture := &rawCapture{}
	go func() {
		res, err := call.req.Session.Elicit(context.WithValue(wctx, captureKey{}, capture), params)
		if capture.res != nil {
			// The sending middleware saw the client's answer: validate it
			// here, whatever the go-sdk thought of it.
			res, err = capture.res, nil
		}
		replies <- reply{res, err}
	}()
	waitReply := true
	defer func() {
		cancel()
		if waitReply {
			<-replies // the request is cancelled; release its goroutine
		}
	}()

	msgs := sub.Messages()
	for {
		select {
		case rp := <-replies:
			waitReply = false
			replies = nil
			if rp.err != nil {
				if wctx.Err() != nil {
					return nil, e.waitErr(ctx)
				}
				return nil, clientError(rp.err)
			}
			res := fromElicitResult(rp.res)
			if r.Mode == ModeForm || res.Action != Accept {
				return res, nil
			}
			// URL mode, accepted: the user went to the page; wait for it.
			if res, ok, err := e.readResult(ctx, s); ok || err != nil {
				return res, err
			}
		case _, ok := <-msgs:
			if !ok {
				// The subscription ended: subscribe again, then read.
				sub.Close()
				if sub, err = e.store.Subscribe(wctx, s.channel()); err != nil {
					if wctx.Err() != nil {
						return nil, e.waitErr(ctx)
					}
					return nil, fmt.Errorf("elicit: subscribe: %w", err)
				}
				defer sub.Close()
				msgs = sub.Messages()
			}
			if res, ok, err := e.readResult(ctx, s); ok || err != nil {
				return res, err
			}
		case <-wctx.Done():
			return nil, e.waitErr(ctx)
		}
	}
}

// clientError reports a failed elicitation/create. An error the client
// sent back is reduced to its code: its message may quote the answer.
func clientError(err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return &ClientError{Code: we.Code}
	}
	return fmt.Errorf("elicit: elicitation/create: %w", err)
}

// waitErr is the error of a wait that ended without an answer: ctx's own
// error, or ErrTimeout.
func (e *Elicitor) waitErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return ErrTimeout
}

// readResult takes the elicitation's result from the store, if one is
// there. ok reports whether the wait is over.
func (e *Elicitor) readResult(ctx context.Context, s *slot) (res *Response, ok bool, err error) {
	var rr resultRecord
	err = s.take(ctx, purposeResult, &rr)
	if errors.Is(err, ErrUnknownElicitation) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	if rr.Superseded {
		return nil, true, ErrCancelled
	}
	return &Response{Action: rr.Action, Content: rr.Content}, true, nil
}
