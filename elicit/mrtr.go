package elicit

import (
	"context"
	"time"
)

func (e *Elicitor) inputRequest(ctx context.Context, r *Request, ttl time.Duration, o *options) (*Response, error) {
	return nil, ErrInputRequired
}
