package mcpgo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/elicitvault/elicitvault/internal/engine"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/elicitvault/elicitvault/internal/httpbody"
)

// The requestState of 2026-07-28 is checked before mcp-go reads the
// request: mcp-go has no way to answer -32602 from a hook or a middleware
// (an OnRequestInitialization error is -32600, a tool handler's error
// -32603). So the tool call of a 2026-07-28 request that carries one of
// elicitvault's requestStates begins at the transport: the check reads
// the call (tool, arguments, _meta, inputResponses), builds its peer and
// calls engine.Begin, which verifies and claims the requestState (bound to
// the subject, the tool and its arguments; used once) and opens the
// answers. A refusal is answered there, JSON-RPC -32602 for a tampered,
// replayed or foreign state, and mcp-go never sees the request; otherwise
// the request goes on, and the tool call's middleware runs the handler in
// the run begun for it. A requestState of someone else's (not "ev1." or
// "ev2.") passes untouched: elicitvault never reads it.

// maxChecked bounds the body the check reads whole; a longer one passes
// to mcp-go unread, and its requestState, if any, is refused by the
// middleware (errUnchecked).
const maxChecked = 4 << 20

// begun is a tool call the transport began.
type begun struct {
	state string
	ctx   context.Context // Begin's: the handler's values and cancellation
	run   *engine.Run
	peer  *peer
	took  bool
}

type begunKey struct{}

// begins are the calls a stdio connection's check began whose handler has
// not run yet, by requestState: mcp-go serves every line of a connection
// with the connection's context, so the middleware finds them here.
type begins struct {
	mu sync.Mutex
	m  map[string]*begunEntry
}

type begunEntry struct {
	b  *begun
	at time.Time
}

// put adds b, ending the runs whose call never started (mcp-go refused
// the request after the check).
func (t *begins) put(ctx context.Context, b *begun) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[string]*begunEntry)
	}
	now := time.Now()
	for k, e := range t.m {
		if now.Sub(e.at) > time.Minute {
			delete(t.m, k)
			go e.b.run.End(ctx)
		}
	}
	t.m[b.state] = &begunEntry{b: b, at: now}
}

func (t *begins) take(state string) *begun {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[state]
	if !ok {
		return nil
	}
	delete(t.m, state)
	return e.b
}

// takeBegun returns the run the transport began for requestState, or nil.
func takeBegun(ctx context.Context, state string) *begun {
	switch v := ctx.Value(begunKey{}).(type) {
	case *begun:
		if v.state == state && !v.took {
			v.took = true
			return v
		}
	case *begins:
		return v.take(state)
	}
	return nil
}

// ours reports whether state is one of elicitvault's requestStates.
func ours(state string) bool { return state != "" && engine.OwnsState(state) }

// call is what the check reads of a JSON-RPC message.
type call struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Name           string                     `json:"name"`
		TaskID         string                     `json:"taskId"`
		Arguments      json.RawMessage            `json:"arguments"`
		RequestState   string                     `json:"requestState"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
		Meta           struct {
			Protocol      string            `json:"io.modelcontextprotocol/protocolVersion"`
			Capabilities  *callCapabilities `json:"io.modelcontextprotocol/clientCapabilities"`
			LogLevel      string            `json:"io.modelcontextprotocol/logLevel"`
			ProgressToken any               `json:"progressToken"`
		} `json:"_meta"`
	} `json:"params"`
}

// callCapabilities is what the check reads of a call's client
// capabilities: these fields of mcp.ClientCapabilities, as mcp-go decodes
// them, and none of the others.
type callCapabilities struct {
	Extensions  map[string]json.RawMessage `json:"extensions"`
	Elicitation *mcp.ElicitationCapability `json:"elicitation"`
}

// mayNameState reports whether msg may hold a requestState key as JSON
// reads it: the name in any case (encoding/json matches keys without
// case, Unicode's included), any escape or any non-ASCII byte (either may
// spell it). A body that cannot is let through without decoding.
func mayNameState(msg []byte) bool {
	if bytes.IndexByte(msg, '\\') >= 0 || !isASCII(msg) {
		return true
	}
	// In ASCII, every spelling of the name has its q or Q at index 2: the
	// body is searched for those (a rare letter in JSON-RPC) rather than
	// compared at every r.
	const name = "requeststate"
	for _, q := range []byte{'q', 'Q'} {
		for from := 0; ; {
			i := bytes.IndexByte(msg[from:], q)
			if i < 0 {
				break
			}
			at := from + i - 2
			if at >= 0 && len(msg)-at >= len(name) && bytes.EqualFold(msg[at:at+len(name)], []byte(name)) {
				return true
			}
			from += i + 1
		}
	}
	return false
}

// isASCII reports whether every byte of b is ASCII, eight at a time.
func isASCII(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b)&0x8080808080808080 != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// stateToCheck decodes msg and reports whether it is a tools/call of
// 2026-07-28 with one of elicitvault's requestStates. decoded is msg
// already decoded (taskMessage's), or nil: a retried call is decoded once
// here, not twice, before mcp-go decodes it again. header is the
// Mcp-Protocol-Version header ("" over stdio).
func stateToCheck(msg []byte, decoded *call, header string) (*call, bool) {
	if !mayNameState(msg) {
		return nil, false
	}
	c := decoded
	if c == nil {
		c = new(call)
		if json.Unmarshal(msg, c) != nil {
			return nil, false
		}
	}
	if c.Method != string(mcp.MethodToolsCall) || c.Params.RequestState == "" {
		return nil, false
	}
	if !mcp.IsModernProtocol(c.Params.Meta.Protocol) && !mcp.IsModernProtocol(header) {
		// Before 2026-07-28 nothing reads a requestState.
		return nil, false
	}
	return c, ours(c.Params.RequestState)
}

// begin begins the tool call c of the call who at the transport. A
// JSON-RPC error response is returned when the call must not run.
func (f *Server) begin(ctx context.Context, c *call, who engine.Identity, protocol string) (*begun, []byte) {
	p := &peer{m: f.m, info: engine.CallInfo{
		Who:           who,
		ClientID:      engine.ClientID(ctx), // Handler's, from the HTTP request
		Tool:          c.Params.Name,
		Arguments:     c.Params.Arguments,
		Protocol:      protocol,
		LogLevel:      c.Params.Meta.LogLevel,
		ProgressToken: c.Params.Meta.ProgressToken,
	}}
	if caps := c.Params.Meta.Capabilities; caps != nil {
		p.info.FormMode, p.info.URLMode = elicitationModes(caps.Elicitation)
	}
	hctx, run, err := f.eng.Begin(ctx, p, c.Params.RequestState, c.Params.InputResponses)
	var ip *engine.InvalidParamsError
	switch {
	case errors.As(err, &ip):
		return nil, errorResponse(c.ID, mcp.INVALID_PARAMS, ip.Error())
	case err != nil:
		return nil, errorResponse(c.ID, mcp.INTERNAL_ERROR, err.Error())
	}
	return &begun{state: c.Params.RequestState, ctx: hctx, run: run, peer: p}, nil
}

func errorResponse(id json.RawMessage, code int, msg string) []byte {
	return rpcErrorResponse(id, &engine.RPCError{Code: int64(code), Message: msg})
}

// protocolOf is the protocol version of c: its _meta's, else the header's.
func protocolOf(c *call, header string) string {
	if c.Params.Meta.Protocol != "" {
		return c.Params.Meta.Protocol
	}
	return header
}

// checkHTTP is the check in front of mcp-go's Streamable HTTP server.
func (f *Server) checkHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, ok := httpbody.Peek(r, maxChecked)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		header := r.Header.Get(mcp.HeaderProtocolVersion)
		// A 2026-07-28 request has no session: its state is bound to the
		// subject alone (with the tool and its arguments).
		sessionless := func() engine.Identity {
			return engine.Identity{Subject: f.subject(r.Context()), Session: engine.Sessionless}
		}
		tc := f.taskMessage(body, header)
		if tc != nil {
			refusal := taskHeaders(r, tc)
			status := http.StatusBadRequest
			asTask := false
			if refusal == nil {
				refusal, status, asTask = f.taskRequest(r.Context(), tc, sessionless())
			}
			if refusal != nil {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				w.Write(refusal)
				return
			}
			// The call may become a task (RunAsTask, StartTask).
			replies := &taskReplies{}
			w = &taskWriter{ResponseWriter: w, replies: replies}
			r = r.WithContext(context.WithValue(r.Context(), repliesKey{}, replies))
			if asTask {
				// A task's call ignores a requestState, as on the go-sdk.
				next.ServeHTTP(w, r)
				return
			}
		}
		c, check := stateToCheck(body, tc, header)
		if !check {
			next.ServeHTTP(w, r)
			return
		}
		who := sessionless()
		b, refusal := f.begin(r.Context(), c, who, protocolOf(c, header))
		if refusal != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write(refusal)
			return
		}
		defer b.run.End(r.Context()) // when mcp-go refused it after all
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), begunKey{}, b)))
	})
}

// stdioKey is the context key of a stdio connection's session ID.
type stdioKey struct{}

// stdioOutKey is the context key of a stdio connection's output, a
// *lockedWriter.
type stdioOutKey struct{}

// checkLines copies the JSON-RPC messages of in, one a line, to out,
// checking each on the way (the stdio connection of the call who):
// refused ones are answered on reply instead of passed on.
func (f *Server) checkLines(ctx context.Context, in io.Reader, out io.Writer, reply io.Writer, who engine.Identity, table *begins) error {
	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			asTask := false
			tc := f.taskMessage(line, "")
			if tc != nil {
				var response []byte
				if response, _, asTask = f.taskRequest(ctx, tc, who); response != nil {
					if _, err := reply.Write(append(response, '\n')); err != nil {
						return err
					}
					continue
				}
			}
			if c, check := stateToCheck(line, tc, ""); check && !asTask {
				b, refusal := f.begin(ctx, c, who, protocolOf(c, ""))
				if refusal != nil {
					if _, err := reply.Write(append(refusal, '\n')); err != nil {
						return err
					}
					continue
				}
				table.put(ctx, b)
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
