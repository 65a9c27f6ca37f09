package elicit

import (
	"context"
	"time"

	"github.com/elicitvault/elicitvault/internal/engine"
)

// The wait is the engine's (engine.Slot.Await, engine.ResultReader); these
// give its results as the flow's Response.

// response is a result record as the flow's Response.
func response(r *engine.Result) *Response {
	if r == nil {
		return nil
	}
	return &Response{Action: Action(r.Action), Content: r.Content}
}

// readResult is engine.Slot.ReadResult.
func readResult(ctx context.Context, s *engine.Slot) (*Response, bool, error) {
	r, ok, err := s.ReadResult(ctx)
	return response(r), ok, err
}

// await is engine.Slot.Await.
func await(ctx context.Context, expiry time.Time, s *engine.Slot, sub *engine.Subscription) (*Response, error) {
	r, err := s.Await(ctx, expiry, sub)
	return response(r), err
}

// resultReader is engine.ResultReader.
type resultReader struct{ *engine.ResultReader }

func (r resultReader) read(ctx context.Context) (*Response, bool, error) {
	res, ok, err := r.Read(ctx)
	return response(res), ok, err
}
