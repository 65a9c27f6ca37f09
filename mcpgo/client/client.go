// Package client answers the elicitations of MCP servers for a
// mark3labs/mcp-go client, with the same checks as elicit/client, whose
// UIs it takes: a form outside the MCP subset or asking for a secret is
// refused, the user's answer is checked against the schema before it is
// sent and sent as submitted, a link must pass elicit/client's URL policy
// (https, no user information, plain ASCII, a real host, the allowlist)
// and the user's consent before the browser opens, and a mode without a
// UI is neither declared nor answered (it is declined).
//
//	h := client.New(&evclient.Options{Form: formUI, URL: urlUI}) // elicit/client's UIs
//	tr, err := transport.NewStreamableHTTP("https://mcp.example.com/mcp")
//	if err != nil {
//		log.Fatal(err)
//	}
//	c := mcpclient.NewClient(tr, h.Options(mcp.ClientCapabilities{})...)
//
// [Handler.Options] gives the mcp-go client options that install a [Handler] and
// declare its modes. The mcp-go client then uses it for elicitation/create
// requests (protocol 2025-06-18 and 2025-11-25) and for the elicitations
// among the input requests of protocol 2026-07-28, which it fulfils before
// it calls the tool again with the requestState.
//
// Two things are mcp-go's, not the Handler's: mcp-go's client sends an
// error of the handler as a JSON-RPC internal error (-32603, with the
// error's text, which never carries a value the user typed), where
// elicit/client on the go-sdk sends a refusal as invalid params (-32602);
// and its Streamable HTTP transport gives a server's request 30 seconds,
// after which the context of the UI is done and no answer reaches the
// server: a form UI for people should say so.
package client

import (
	"context"

	evclient "github.com/elicitvault/elicitvault/elicit/client"
	"github.com/elicitvault/elicitvault/internal/clientlink"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// Handler answers elicitation requests of an mcp-go client through the UI
// of elicit/client's Options. It is an mcp-go client.ElicitationHandler,
// safe for concurrent use if its UI is.
type Handler struct {
	h    *evclient.Handler
	form bool
	url  bool
}

var _ mcpclient.ElicitationHandler = (*Handler)(nil)

// New returns a Handler over the UI of opts (see elicit/client.Options);
// nil options make one without a UI, which declares no capability and
// declines every elicitation.
func New(opts *evclient.Options) *Handler {
	h := &Handler{h: evclient.New(opts)}
	if opts != nil {
		h.form, h.url = opts.Form != nil, opts.URL != nil
	}
	return h
}

// capabilities returns the elicitation capability to declare: form, url,
// both, or nil when the Handler has no UI.
func (h *Handler) capabilities() *mcp.ElicitationCapability {
	if !h.form && !h.url {
		return nil
	}
	c := &mcp.ElicitationCapability{}
	if h.form {
		c.Form = &struct{}{}
	}
	if h.url {
		c.URL = &struct{}{}
	}
	return c
}

// Options returns the mcp-go client options that make the client answer
// elicitations with h and declare exactly its modes, with caps for the
// client's other capabilities (its Elicitation is replaced). Without a
// UI the client declares no elicitation and gets no handler: mcp-go then
// refuses a server's elicitation request itself.
//
//	tr, _ := transport.NewStreamableHTTP(url)
//	c := client.NewClient(tr, h.Options(mcp.ClientCapabilities{})...)
func (h *Handler) Options(caps mcp.ClientCapabilities) []mcpclient.ClientOption {
	caps.Elicitation = h.capabilities()
	opts := []mcpclient.ClientOption{mcpclient.WithClientCapabilities(caps)}
	if caps.Elicitation != nil {
		opts = append(opts, mcpclient.WithElicitationHandler(h))
	}
	return opts
}

// Elicit answers one elicitation request: the form or the link goes to
// the UI after elicit/client's checks, and the result is what the user
// chose. A refused request is an error matching elicit/client's
// ErrRefused with errors.Is.
func (h *Handler) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	p := req.Params
	action, content, err := clientlink.Answer(ctx, h.h, &clientlink.Request{
		Mode: p.Mode, Message: p.Message, Schema: p.RequestedSchema,
		URL: p.URL, ElicitationID: p.ElicitationID,
	})
	if err != nil {
		return nil, err
	}
	res := &mcp.ElicitationResult{}
	res.Action = mcp.ElicitationResponseAction(action)
	if content != nil {
		res.Content = content
	}
	return res, nil
}
