// Package client answers the elicitations of MCP servers for a go-sdk
// client, with the rules the MCP specification sets for the client end
// built in.
//
//	h := client.New(&client.Options{Form: formUI, URL: urlUI}) // your UIs
//	opts := &mcp.ClientOptions{}
//	h.Install(opts) // the handler and the capabilities it declares
//	c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, opts)
//	h.Attach(c) // what the user submitted is sent as is
//	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "https://mcp.example.com/mcp"}, nil)
//
// A [Handler] is made by [New] from a UI that asks the user: a [FormUI]
// fills in forms, a [URLUI] asks consent to open a link. The Handler
// declares exactly the
// elicitation modes its UI supports, and
//
//   - in form mode, refuses a schema outside the MCP subset, refuses a form
//     that asks for a secret (a password, a token, a card number...: those
//     belong in URL mode, where the value never passes through the client),
//     and checks the user's answer against the schema before it is sent,
//     with the same rules as the server side of elicitvault, and sends
//     exactly what the user submitted (no default the user did not see);
//   - in URL mode, refuses a link that is not https (http only to a
//     loopback address), that carries user information, that is not plain
//     ASCII (an internationalized host must come in its punycode form, as
//     shown to the user), whose host cannot be a real one, or whose host
//     is outside the allowlist; reads the host as a browser does
//     ("2130706433" is 127.0.0.1) and shows, checks and opens the link with
//     that host; asks the user's consent showing the full URL and its host,
//     and only then opens the system browser, without a shell;
//   - returns decline or cancel as the user chose, and declines what no UI
//     can ask.
//
// [Handler.Install] sets the Handler on mcp.ClientOptions, and
// [Handler.Attach] on the client made with them. The go-sdk client then uses it for elicitation/create
// requests (protocol 2025-11-25) and for the input requests of protocol
// 2026-07-28, which its multi-round-trip middleware fulfils before it
// calls the tool again with the requestState. A client that turns that
// middleware off answers them with [Handler.CallTool], and then, as with Attach for
// elicitation/create, the server gets exactly what the user submitted:
// the go-sdk's own path adds the schema's defaults for the fields the user
// left empty.
package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/internal/clientlink"
	"github.com/elicitvault/elicitvault/internal/form"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FormUI asks the user to fill in a form.
//
// Form shows the form's message and fields, each pre-filled with its
// Default (SEP-1034), and returns what the user chose: Accept with the
// content, Decline or Cancel. The content is sent as is: the Handler
// adds no default, so a field the user emptied, a choice set to none or
// a multi-selection with nothing ticked must be in it as the user left it
// (absent, or an empty list). It should check each
// value with Field.Check or the whole content with
// FormRequest.Check as the user types, and must not submit on the user's
// behalf. A returned error ends the elicitation with that error; a context
// that is done (the server gave up, or the user interrupted) should end it
// with Cancel.
type FormUI interface {
	Form(ctx context.Context, f *FormRequest) (*Answer, error)
}

// URLUI asks the user's consent to open a link.
//
// ConsentURL shows the request's message, its full URL and its host
// (highlighted: it is what the user must check) and returns Accept only
// when the user explicitly agreed to open it; Decline or Cancel otherwise.
// The Handler opens the link after an Accept.
type URLUI interface {
	ConsentURL(ctx context.Context, u *URLRequest) (elicit.Action, error)
}

// Answer is the user's answer, as a FormUI returns it, and as the Handler
// sends it back.
type Answer struct {
	Action  elicit.Action
	Content map[string]any // for Accept in form mode: exactly what the user submitted, checked
}

// Options configure a Handler. A nil Form or URL means the UI cannot ask
// in that mode: the mode is not declared, and a request in it is declined.
type Options struct {
	Form FormUI
	URL  URLUI

	// AllowedHosts, when not empty, is the only hosts URL mode may open:
	// "example.com" matches that host, "*.example.com" any host under it.
	AllowedHosts []string

	// Open opens a link the user agreed to open. Nil means OpenBrowser.
	Open func(ctx context.Context, url string) error

	// MaxAttempts bounds how many times a form is asked again when the
	// UI returns content that does not match the schema; 0 means 3.
	MaxAttempts int
}

// Handler answers elicitation requests through a UI. It is safe for
// concurrent use if its UI is.
type Handler struct {
	o Options
}

// New returns a Handler; nil options make one without a UI, which declares
// no capability and declines every elicitation.
func New(opts *Options) *Handler {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Open == nil {
		o.Open = OpenBrowser
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	return &Handler{o: o}
}

// capabilities returns the elicitation capability to declare: form, url,
// both, or nil when the Handler has no UI.
func (h *Handler) capabilities() *mcp.ElicitationCapabilities {
	if h.o.Form == nil && h.o.URL == nil {
		return nil
	}
	c := &mcp.ElicitationCapabilities{}
	if h.o.Form != nil {
		c.Form = &mcp.FormElicitationCapabilities{}
	}
	if h.o.URL != nil {
		c.URL = &mcp.URLElicitationCapabilities{}
	}
	return c
}

// Install sets h as the elicitation handler of o and declares its
// capabilities. Without a UI it sets nothing: the client does not declare
// elicitation, and the go-sdk refuses any request. A client that shows
// the user what h refused (ErrRefused) wraps o.ElicitationHandler after
// Install.
func (h *Handler) Install(o *mcp.ClientOptions) {
	caps := h.capabilities()
	if caps == nil {
		return
	}
	o.ElicitationHandler = h.elicit
	c := &mcp.ClientCapabilities{}
	if o.Capabilities != nil {
		cp := *o.Capabilities
		c = &cp
	}
	c.Elicitation = caps
	o.Capabilities = c
}

// Attach makes c answer elicitation/create requests with h directly, so
// that what the user submitted is sent as is: without it, the go-sdk
// client adds the schema's defaults to the content of an accepted form,
// so a field the user set to none, or emptied, would reach the server
// with the default the user removed. Call it on the client made with the
// options Install set.
//
// Input requests of protocol 2026-07-28 that the go-sdk's multi-round-trip
// middleware fulfils get those defaults too: a client that must send
// exactly what its user chose turns that middleware off
// (mcp.MultiRoundTripOptions Disabled) and calls tools with h.CallTool.
func (h *Handler) Attach(c *mcp.Client) {
	if h.capabilities() == nil {
		return
	}
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			er, ok := req.(*mcp.ElicitRequest)
			if !ok || method != "elicitation/create" {
				return next(ctx, method, req)
			}
			res, err := h.elicit(ctx, er)
			if err != nil {
				return nil, err
			}
			return res, nil
		}
	})
}

// ErrRefused is matched (errors.Is) by every request the Handler refuses
// by the rules of the client end: a malformed request, a form that asks
// for a secret, an answer that does not match the form, a link it will
// not open (each reaches the server as a JSON-RPC error, -32602), and, in
// CallTool, a server that keeps asking for input. The error's text says
// which, never a value the user typed.
var ErrRefused = errors.New("client: refused")

// The reasons of a refusal, each an ErrRefused.
var (
	errSecretField    = fmt.Errorf("%w: the form asks for a secret, which must not pass through the MCP client: use URL mode", ErrRefused)
	errInvalidAnswer  = fmt.Errorf("%w: the answer does not match the form", ErrRefused)
	errRefusedURL     = fmt.Errorf("%w URL", ErrRefused)
	errInvalidRequest = fmt.Errorf("%w: invalid elicitation request", ErrRefused)
)

// refusal is a JSON-RPC error for the server that unwraps to the reason.
type refusal struct {
	rpc *jsonrpc.Error
	err error
}

func (r *refusal) Error() string   { return r.err.Error() }
func (r *refusal) Unwrap() []error { return []error{r.rpc, r.err} }

// refused marks an error of Answer as a refusal of the request (one of
// the err… reasons above), which an SDK sends as invalid params.
type refused struct{ err error }

func (r *refused) Error() string { return r.err.Error() }
func (r *refused) Unwrap() error { return r.err }

func refuse(err error) error { return &refused{err} }

// request is one elicitation request, as any MCP SDK's client receives it.
type request = clientlink.Request

func init() {
	clientlink.Answer = func(ctx context.Context, h any, r *request) (string, map[string]any, error) {
		a, err := h.(*Handler).answer(ctx, r)
		if err != nil {
			return "", nil, err
		}
		return string(a.Action), a.Content, nil
	}
}

// elicit answers one elicitation request: the mcp.ClientOptions
// ElicitationHandler that Install sets.
func (h *Handler) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if req == nil || req.Params == nil {
		return nil, invalidParams(errInvalidRequest)
	}
	p := req.Params
	r := &request{Mode: p.Mode, Message: p.Message, Schema: p.RequestedSchema, URL: p.URL, ElicitationID: p.ElicitationID}
	if req.Session != nil {
		if ir := req.Session.InitializeResult(); ir != nil && ir.ServerInfo != nil {
			r.Server = ir.ServerInfo.Name
		}
	}
	rep, err := h.answer(ctx, r)
	if err != nil {
		var rf *refused
		if errors.As(err, &rf) {
			return nil, invalidParams(rf.err)
		}
		return nil, err
	}
	res := &mcp.ElicitResult{Action: string(rep.Action)}
	if rep.Content != nil {
		res.Content = rep.Content
	}
	return res, nil
}

func invalidParams(err error) error {
	return &refusal{rpc: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}, err: err}
}

// answer answers one elicitation request through the UI, whatever the SDK
// it came through (elicit is answer for the go-sdk; mcpgo/client calls it
// through clientlink for mcp-go clients). An error that refuses the
// request matches ErrRefused with errors.Is; a UI's error comes back as it
// is.
func (h *Handler) answer(ctx context.Context, r *request) (*Answer, error) {
	if r == nil {
		return nil, refuse(errInvalidRequest)
	}
	switch r.Mode {
	case "", "form":
		if r.URL != "" {
			return nil, refuse(fmt.Errorf("%w: a form with a URL", errInvalidRequest))
		}
		if h.o.Form == nil {
			return decline(), nil
		}
		return h.form(ctx, r)
	case "url":
		if r.Schema != nil {
			return nil, refuse(fmt.Errorf("%w: a URL with a schema", errInvalidRequest))
		}
		if h.o.URL == nil {
			return decline(), nil
		}
		return h.url(ctx, r)
	default:
		return decline(), nil
	}
}

func decline() *Answer { return &Answer{Action: elicit.Decline} }

func (h *Handler) form(ctx context.Context, r *request) (*Answer, error) {
	f, err := newFormRequest(r.Message, r.Schema)
	if err != nil {
		return nil, refuse(err)
	}
	f.Server = r.Server
	for attempt := 1; ; attempt++ {
		ans, err := h.o.Form.Form(ctx, f)
		if err != nil {
			if ctx.Err() != nil {
				return &Answer{Action: elicit.Cancel}, nil
			}
			return nil, err
		}
		if ans == nil {
			return &Answer{Action: elicit.Cancel}, nil
		}
		switch ans.Action {
		case elicit.Decline, elicit.Cancel:
			return &Answer{Action: ans.Action}, nil
		case elicit.Accept:
		default:
			return nil, fmt.Errorf("client: the form UI answered %q", ans.Action)
		}
		// Exactly what the user submitted: a field the user left empty
		// is not filled with the server's default behind the user's back
		// (the UI showed the default pre-filled; removing it was a choice).
		content, err := f.schema.Check(ans.Content)
		if err == nil {
			return &Answer{Action: elicit.Accept, Content: wire(content)}, nil
		}
		if attempt >= h.o.MaxAttempts {
			return nil, refuse(fmt.Errorf("%w: %w", errInvalidAnswer, err))
		}
		f.Problem = err
	}
}

// wire returns validated content as the SDKs send and check it:
// multi-selections as []any.
func wire(content map[string]any) map[string]any {
	for k, v := range content {
		if ss, ok := v.([]string); ok {
			l := make([]any, len(ss))
			for i, s := range ss {
				l[i] = s
			}
			content[k] = l
		}
	}
	return content
}

func (h *Handler) url(ctx context.Context, r *request) (*Answer, error) {
	u, err := checkURL(r.URL, h.o.AllowedHosts)
	if err != nil {
		return nil, refuse(err)
	}
	u.Message, u.ElicitationID, u.Server = r.Message, r.ElicitationID, r.Server
	action, err := h.o.URL.ConsentURL(ctx, u)
	if err != nil {
		if ctx.Err() != nil {
			return &Answer{Action: elicit.Cancel}, nil
		}
		return nil, err
	}
	switch action {
	case elicit.Accept:
		if err := h.o.Open(ctx, u.URL); err != nil {
			return nil, fmt.Errorf("client: opening the link: %w", err)
		}
		return &Answer{Action: elicit.Accept}, nil
	case elicit.Decline, elicit.Cancel:
		return &Answer{Action: action}, nil
	default:
		return nil, fmt.Errorf("client: the URL UI answered %q", action)
	}
}

// FormRequest is a form to fill in: its message and fields, as the server
// asked, with the means to check an answer.
type FormRequest struct {
	Server  string // the server's name, as it introduced itself (unverified)
	Message string
	Fields  []Field
	// Problem is why the previous answer was refused, when the form is
	// asked again; nil the first time.
	Problem error

	schema *form.Schema
}

// newFormRequest parses a requested schema (a JSON object, or a value that
// encodes to one) within the MCP subset, and refuses a form that asks for
// a secret. Errors match errInvalidRequest or errSecretField.
//
// The go-sdk decodes a request's schema into a map, so the order of the
// fields as the server wrote them is lost: they come sorted by name.
func newFormRequest(message string, schema any) (*FormRequest, error) {
	raw, ok := schema.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(schema); err != nil {
			return nil, fmt.Errorf("%w: the schema does not encode", errInvalidRequest)
		}
	}
	s, err := form.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errInvalidRequest, err)
	}
	f := &FormRequest{Message: message, schema: s}
	for i := range s.Fields {
		sf := &s.Fields[i]
		if form.Sensitive(sf) {
			return nil, fmt.Errorf("%w (field %q)", errSecretField, sf.Name)
		}
		f.Fields = append(f.Fields, Field{
			Name: sf.Name, Kind: kinds[sf.Kind], Title: cmp.Or(sf.Title, sf.Name), Description: sf.Description, Required: sf.Required,
			MinLength: sf.MinLength, MaxLength: sf.MaxLength, Format: sf.Format,
			Minimum: sf.Minimum, Maximum: sf.Maximum,
			Options: options(sf.Options), MinItems: sf.MinItems, MaxItems: sf.MaxItems,
			Default: sf.Default, f: sf,
		})
	}
	return f, nil
}

// Check checks a whole answer; the error (an *elicit.ContentError) names
// the offending field by its JSON pointer and never quotes the value.
func (f *FormRequest) Check(content map[string]any) error {
	_, err := f.schema.Validate(content)
	return err
}
