package mcpgo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/elicitvault/elicitvault/internal/oneshot"
	"github.com/elicitvault/elicitvault/internal/token"
	"github.com/mark3labs/mcp-go/mcp"
)

// The requestState of 2026-07-28 is checked before mcp-go reads the
// request: mcp-go has no way to answer -32602 from a hook or a middleware
// (an OnRequestInitialization error is -32600, a tool handler's error
// -32603). The check reads a tools/call whose params carry one of
// elicitvault's requestStates, verifies and claims it with the engine
// (bound to the subject, the session, the tool and its arguments; used
// once) and either answers the JSON-RPC error itself or passes the
// request on with the claim, which the tool call's middleware hands to
// the handler. A requestState of someone else's (not "ev1." or "ev2.")
// passes untouched: elicitvault never reads it.

// maxChecked bounds the body the check reads whole; a longer one passes
// to mcp-go unread, and its requestState, if any, is never trusted.
const maxChecked = 4 << 20

// errBadStateMessage is the message of -32602 for a requestState that
// does not verify, one for every reason.
const errBadStateMessage = "elicit: invalid params: requestState is invalid, expired or already used; call again without it"

// claim is a requestState the transport verified and claimed for one
// tool call.
type claim struct {
	state  string
	claims *token.Claims
	who    engine.Identity

	mu  sync.Mutex
	use *oneshot.Use
}

func (c *claim) matches(who engine.Identity) bool { return c.who == who }

// release gives the claim back unless the handler's run committed it.
func (c *claim) release(ctx context.Context) {
	c.mu.Lock()
	use := c.use
	c.use = nil
	c.mu.Unlock()
	if use != nil {
		use.Release(context.WithoutCancel(ctx))
	}
}

// Take hands the claim's use over to the caller, once.
func (c *claim) take() (*token.Claims, *oneshot.Use) {
	c.mu.Lock()
	defer c.mu.Unlock()
	use := c.use
	c.use = nil
	return c.claims, use
}

type claimKey struct{}

// claims are the requestStates the check of a connection claimed whose
// tool call has not started yet, by requestState; the middleware takes
// them. Over HTTP the request's context carries them; over stdio, where
// mcp-go serves every line with the connection's context, the
// connection's table does.
type claims struct {
	mu sync.Mutex
	m  map[string]*claimEntry
}

type claimEntry struct {
	c  *claim
	at time.Time
}

// put adds c, releasing the claims whose call never started (mcp-go
// refused the request after the check).
func (t *claims) put(ctx context.Context, c *claim) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[string]*claimEntry)
	}
	now := time.Now()
	for k, e := range t.m {
		if now.Sub(e.at) > time.Minute {
			delete(t.m, k)
			go e.c.release(ctx)
		}
	}
	t.m[c.state] = &claimEntry{c: c, at: now}
}

func (t *claims) take(state string) *claim {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[state]
	if !ok {
		return nil
	}
	delete(t.m, state)
	return e.c
}

// takeClaim returns the claim the transport made for requestState, or nil.
func takeClaim(ctx context.Context, state string) *claim {
	if state == "" {
		return nil
	}
	switch v := ctx.Value(claimKey{}).(type) {
	case *claim:
		if v.state == state {
			return v
		}
	case *claims:
		return v.take(state)
	}
	return nil
}

type heldClaimKey struct{}

func withClaim(ctx context.Context, c *claim) context.Context {
	return context.WithValue(ctx, heldClaimKey{}, c)
}

// heldClaim is the claimed requestState of the tool call of ctx, or nil.
func heldClaim(ctx context.Context) *claim {
	c, _ := ctx.Value(heldClaimKey{}).(*claim)
	return c
}

// ours reports whether state is one of elicitvault's requestStates.
func ours(state string) bool {
	return strings.HasPrefix(state, "ev2.") || strings.HasPrefix(state, "ev1.")
}

// call is what the check reads of a JSON-RPC message.
type call struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Name         string          `json:"name"`
		Arguments    json.RawMessage `json:"arguments"`
		RequestState string          `json:"requestState"`
		Meta         struct {
			Protocol string `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
	} `json:"params"`
}

// stateToCheck decodes msg and reports whether it is a tools/call of
// 2026-07-28 with one of elicitvault's requestStates. header is the
// Mcp-Protocol-Version header ("" over stdio).
func stateToCheck(msg []byte, header string) (*call, bool) {
	if !bytes.Contains(msg, []byte(`"requestState"`)) {
		return nil, false
	}
	var c call
	if json.Unmarshal(msg, &c) != nil || c.Method != string(mcp.MethodToolsCall) || c.Params.RequestState == "" {
		return nil, false
	}
	if !mcp.IsModernProtocol(c.Params.Meta.Protocol) && !mcp.IsModernProtocol(header) {
		// Before 2026-07-28 nothing reads a requestState.
		return nil, false
	}
	return &c, ours(c.Params.RequestState)
}

// check verifies and claims the requestState of c for the call who. A
// JSON-RPC error response is returned when the call must not run.
func (f *Server) check(ctx context.Context, c *call, who engine.Identity) (*claim, []byte) {
	b, err := engine.BindState(who, c.Params.Name, c.Params.Arguments)
	if err != nil {
		return nil, errorResponse(c.ID, mcp.INVALID_PARAMS, errBadStateMessage)
	}
	tc, use, err := f.eng.ClaimState(ctx, b, c.Params.RequestState)
	switch {
	case errors.Is(err, engine.ErrBadState):
		return nil, errorResponse(c.ID, mcp.INVALID_PARAMS, errBadStateMessage)
	case errors.Is(err, token.ErrInProgress):
		return nil, errorResponse(c.ID, mcp.INTERNAL_ERROR, errInProgressMessage)
	case err != nil:
		return nil, errorResponse(c.ID, mcp.INTERNAL_ERROR, "elicit: the requestState could not be checked (store unavailable); send the request again")
	}
	return &claim{state: c.Params.RequestState, claims: tc, who: who, use: use}, nil
}

const errInProgressMessage = "elicit: another request with this requestState is being processed; send it again in a few seconds if it does not answer"

func errorResponse(id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	return b
}

// checkHTTP is the check in front of mcp-go's Streamable HTTP server.
func (f *Server) checkHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxChecked+1))
		rest := r.Body
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), rest), rest}
		if err != nil || len(body) > maxChecked {
			next.ServeHTTP(w, r)
			return
		}
		c, check := stateToCheck(body, r.Header.Get(mcp.HeaderProtocolVersion))
		if !check {
			next.ServeHTTP(w, r)
			return
		}
		// A 2026-07-28 request has no session: its state is bound to the
		// subject alone (with the tool and its arguments).
		who := engine.Identity{Subject: f.subject(r.Context()), Session: engine.Sessionless}
		cl, refusal := f.check(r.Context(), c, who)
		if refusal != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write(refusal)
			return
		}
		defer cl.release(r.Context())
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), claimKey{}, cl)))
	})
}

// stdioKey is the context key of a stdio connection's session ID.
type stdioKey struct{}

// checkLines copies the JSON-RPC messages of in, one a line, to out,
// checking each on the way (the stdio connection of the call who):
// refused ones are answered on reply instead of passed on.
func (f *Server) checkLines(ctx context.Context, in io.Reader, out io.Writer, reply io.Writer, who engine.Identity, table *claims) error {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if c, check := stateToCheck(line, ""); check {
				cl, refusal := f.check(ctx, c, who)
				if refusal != nil {
					if _, err := reply.Write(append(refusal, '\n')); err != nil {
						return err
					}
					continue
				}
				table.put(ctx, cl)
			}
			if _, err := out.Write(line); err != nil {
				return err
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
