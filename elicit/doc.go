// Package elicit asks the user of an MCP client for input in the middle of a
// tool call, with one call that works across protocol versions, and keeps
// everything that waits in between sealed.
//
// A server in full:
//
//	keys, err := keyring.Load(nil) // MCP_ELICITATION_SECRET
//	if err != nil {
//		log.Fatal(err)
//	}
//	ev, err := elicit.New(keys, memory.New(nil), &elicit.Config{BaseURL: "https://mcp.example.com", ServerName: "Contacts"})
//	if err != nil {
//		log.Fatal(err)
//	}
//	server := mcp.NewServer(&mcp.Implementation{Name: "contacts", Version: "1"}, nil)
//	ev.Install(server)
//	type Args struct {
//		IDs []string `json:"ids"`
//	}
//	mcp.AddTool(server, &mcp.Tool{Name: "delete_contacts"}, func(ctx context.Context, req *mcp.CallToolRequest, in Args) (*mcp.CallToolResult, any, error) {
//		ok, err := elicit.Confirm(ctx, fmt.Sprintf("Delete %d contacts?", len(in.IDs)))
//		if err != nil || !ok {
//			return nil, nil, err // return elicit's errors unchanged
//		}
//		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted"}}}, nil, nil
//	})
//	log.Fatal(http.ListenAndServe("localhost:8080", ev.Handler(server, nil))) // MCP at /mcp, URL-mode pages at /elicit/
//
// Stop with ev.Close(), which ends every waiting elicitation, then the
// http.Server's Shutdown.
//
// # Asking
//
// Inside any tool handler, with the handler's context:
//
//	type Contact struct {
//		Name  string `json:"name"`
//		Email string `json:"email"`
//	}
//	res, err := elicit.Form[Contact](ctx, "Who should be added?")
//	if err != nil {
//		return nil, nil, err // return it unchanged: see "Protocols"
//	}
//	if res.Action != elicit.Accept { ... }
//
//	ok, err := elicit.Confirm(ctx, "Delete 47 contacts?")
//
//	action, err := elicit.URL(ctx, "Connect your GitHub account")
//
// The form's schema comes from the Go type (jsonschema.For); to say what a
// Go type cannot (titles, formats, bounds, choices, defaults) make one
// with [SchemaFor], or write it as JSON with [ParseSchema], and pass it
// with [WithSchema]. It is checked against the MCP elicitation subset
// before anything is sent; a field whose name says it holds a secret is
// refused in form mode unless the call says
// [AllowSensitiveFieldsInFormMode]. Accepted content is validated against
// the schema it was asked with, and decoded into the type, before the tool
// sees it. Errors are usable with errors.Is and errors.As ([*SchemaError]
// naming the field, [ErrInvalidContent] and [*ContentError] naming the
// JSON path, [ErrUnsupported], [ErrTimeout], [ErrReplaced], [ErrClosed],
// ...) and never carry a session ID, a subject, a token or the user's
// answer.
//
// [URL] sends the user to the built-in consent page under [Config.BaseURL]
// (Accept or Decline; served by [Elicitor.Handler], or by [Elicitor.Pages]
// on a stdio server), or with [WithLink] to a page of yours that calls
// [Elicitor.CompleteURL], which reports whether the call took the answer
// (say "Done" only then).
//
// # Waiting
//
// A call waits up to the TTL ([Config].TTL, [WithTTL]). While it waits, a tool
// call that carries a progress token gets a progress notification every
// [Config].ProgressInterval, so that a client which resets its request
// timeout on progress keeps waiting while the user reads. A client that
// gives up cancels the call (the error matches context.Canceled); a second
// elicitation in the same session replaces the first ([ErrReplaced]): a
// session has one question open at a time.
//
// # Protocols
//
// On 2025-06-18 and 2025-11-25 the call sends elicitation/create and waits.
//
// On 2026-07-28, the go-sdk's default, a server must not send requests
// during a call. There the first call of [Form], [Confirm] or URL without an
// answer returns an error matching [ErrInputRequired]; the handler returns
// it, and the installed middleware answers the tool call with input
// requests and a sealed requestState (a request-state token bound to the
// tool name, the hash of its arguments and the subject, valid for the TTL,
// usable once). When the client calls again with the answers, the handler
// runs again from the start, and this time the call returns the answer.
// A requestState that does not verify (tampered, expired, already used, or
// bound to another call, session or subject) is the JSON-RPC error -32602
// (invalid params), before the handler runs; a call with the requestState
// but without the answer asks again. The go-sdk decodes inputResponses
// before any middleware: [Elicitor.Handler] answers malformed ones with
// -32602 naming the key; on stdio, serve through [CheckTransport].
// The tool author writes the same code for both; two things follow:
//
//   - What the handler does before it asks runs once per round: see
//     Reruns.
//   - Elicitations are matched to answers by their position in the handler
//     and by what they ask (mode, message, schema): ask the same questions
//     in the same order on every run. An answer to a different question is
//     refused (ErrUnknownElicitation).
//
// # Reruns
//
// A tool handler that asks may run more than once for one tool call: on
// 2026-07-28 it runs again from the start with each round of answers (see
// Protocols), and so it does when the [LLMMediated] fallback continues the
// call with the model's answer (see Clients that cannot elicit). Only the
// blocking request of older protocols and the [BrowserForm] fallback run it
// once. So code before an elicitation must be safe to rerun: keep it
// idempotent, move side effects after the last elicitation, or carry
// progress in the call's sealed state ([SaveState], [LoadState]). Ask the
// same questions in the same order on every run: [Form], [Confirm] and
// [URL] find their answers by position and by what they ask.
//
// # State
//
// An elicitation in progress is a sealed record in the store, bound to the
// subject (the go-sdk's TokenInfo.UserID, when the server authenticates
// users) and the session, under a blinded key. A session has at most one:
// a new elicitation replaces the older one, whose caller gets [ErrReplaced].
// The TTL ends a wait with ErrTimeout, cancels the request at the client
// and releases every goroutine and subscription. A URL-mode answer may
// arrive on any node sharing the store; it is checked there against the
// sealed record, written to the store and announced, and the node that
// asked sends notifications/elicitation/complete.
//
// The session is the transport's session ID, or, for stdio and in-memory
// connections, one of the process's own for the connection. A stateless
// HTTP server (the only kind the go-sdk lets serve 2026-07-28 over HTTP)
// has none: there state is bound to the subject alone, and what ties an
// answer to its call is the sealed requestState, or the elicitation ID
// (128 random bits, given only to the caller) of an LLM-mediated
// elicitation. Authenticate users on such a server.
//
// # Capabilities
//
// The client's capabilities are read per mode, from its initialize request
// and, on 2026-07-28, from each request's _meta. A mode the client lacks is
// never sent: the fallbacks the Config enables are tried, and without one
// that applies the call fails with an error matching [ErrUnsupported],
// which the tool can branch on.
//
// # Clients that cannot elicit
//
// Two fallbacks reach the user of a client without form elicitation
// ([Config].Fallbacks, in order; [WithFallbacks] per call):
//
//	ev, err := elicit.New(keys, store, &elicit.Config{
//		Fallbacks: []elicit.Fallback{elicit.LLMMediated, elicit.BrowserForm},
//	})
//
// [LLMMediated] hands the question to the model. The handler's [Form] or
// [Confirm] returns an error matching [ErrInputRequired], which the handler
// returns unchanged; the tool call then returns instructions (text for the
// model: ask the user, then call sendElicitationResult) and
// _meta.elicitationPending with the elicitation ID (elicitId), the message
// and the requested schema. In URL mode, the model is given the link and
// the ID, and its sendElicitationResult with that ID, once the user is
// done on the page, continues the tool with the page's answer (the model
// can only refuse for the user; a new call of the tool asks again). The elicitation is sealed in the store with the tool's
// name and arguments, bound to the subject and the session, and it is the
// session's one pending elicitation. The tool sendElicitationResult,
// listed only to clients without form or URL mode,
// takes {elicitId, action, content} on any node: from another session or
// another user it finds nothing ([ErrUnknownElicitation]); invalid content
// is a tool error naming the JSON path, and the elicitation stays open for
// a corrected answer; the first valid answer wins (the others get a tool
// error saying it was already answered). It then continues the original tool: the handler runs again
// from the start, its Form or Confirm returns the answer, and the result
// of sendElicitationResult is the tool's result. As with the rounds of
// 2026-07-28, what the handler did before it asked runs again (see
// Reruns). The answer comes from the model; a
// confirmation that guards something dangerous should not accept it
// (WithFallbacks(elicit.BrowserForm), or none).
//
// [BrowserForm], for servers that run on the user's machine, serves the form
// on 127.0.0.1 at a random port, with a per-form nonce in its URL and a
// verification code (like BLUE-TIGER-42) on the page. The URL and the code
// go to the client in a log message (notifications/message, level notice)
// and, when the call has a progress token, in a progress notification;
// never in a tool result, which the model reads, since the URL is the
// form's key. It applies only when the client will show one of them (its
// logging level is notice or below) or [Config].OpenBrowser opens the page.
// The call waits for one submission, validated by the form's schema on the
// server, until the TTL ([ErrTimeout]) or the end of the call. Close the
// Elicitor to stop its form server.
//
// [Confirm] returns true only on an explicit accept with the box ticked,
// whichever path the answer took; every other end is false.
package elicit
