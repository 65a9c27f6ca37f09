// Package mcpgo is elicitvault for servers and clients built on
// github.com/mark3labs/mcp-go (v1.2.1). It is a module of its own, released
// in lockstep with the core module, so that a go-sdk user never downloads
// mcp-go (store/layout_test.go holds it).
//
// A server in full:
//
//	keys, err := keyring.Load(nil) // MCP_ELICITATION_SECRET
//	ev, err := elicit.New(keys, memory.New(nil), &elicit.Config{BaseURL: "https://mcp.example.com", ServerName: "Contacts"})
//	s := server.NewMCPServer("contacts", "1.0.0")
//	front := mcpgo.New(ev, s, nil)
//	s.AddTool(mcp.NewTool("delete_contacts"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
//		ok, err := elicit.Confirm(ctx, "Delete 3 contacts?")
//		if err != nil {
//			return nil, err // return elicit's errors unchanged
//		}
//		if !ok {
//			return mcp.NewToolResultText("Nothing deleted."), nil
//		}
//		...
//	})
//	http.ListenAndServe(addr, front.Handler(nil)) // MCP at /mcp, URL-mode pages at /elicit/
//
// The package is the server front-end: [New] installs an Elicitor on an
// mcp-go server, and [elicit.Confirm], [elicit.Form] and [elicit.URL] work
// in its tool handlers as they do on the go-sdk; [Server.Handler] and
// [Server.ServeStdio] serve it. mcpgo/client holds elicit/client's checks as an
// mcp-go client.ElicitationHandler. elicit/elicittest runs a tool against
// a scripted user through [Server.Handler], as it does on the go-sdk:
// elicittest.Call(t, front.Handler(nil), "tool", nil, steps...).
//
// As on the go-sdk, a tool handler that asks may run more than once for
// one tool call, so code before an elicitation must be safe to rerun: see
// Reruns in the documentation of package [elicit]. The consent page of
// URL mode names the server by [elicit.Config].ServerName (mcp-go does
// not let the Elicitor read the server's name).
//
// mcp-go has no authenticated user: a server that authenticates its
// clients sets Options.Subject, which reads the user from the request's
// context.
//
// The front-end maps mcp-go's request, session, capabilities, middleware
// and transport onto the SDK-neutral engine (internal/engine) as below;
// each line names the mcp-go calls it uses, so that a reviewer can check
// that nothing waits in mcp-go's memory.
//
// # Which protocol, which capabilities
//
// server.RequestProtocolVersion(ctx) and mcp.IsModernProtocol choose the
// path once per call. Capabilities are read per request, never from an
// earlier one: server.RequestProtocolInfoFromContext(ctx).ClientCapabilities
// on 2026-07-28 (the request's _meta), and, before it,
// server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo).
// GetClientCapabilities() (the initialize handshake). An empty
// mcp.ElicitationCapability is form mode only; URL mode needs its URL
// field.
//
// # Blocking elicitation (2025-06-18, 2025-11-25)
//
// The engine seals the pending record in the store first, then sends the
// request itself through the session:
// ClientSessionFromContext(ctx).(server.SessionWithElicitation).
// RequestElicitation(ctx, mcp.ElicitationRequest{...}), with the form's
// schema as a json.RawMessage so that the fields keep the server's order.
// The tool handler never returns an input-required result to a client of
// these versions: mcp-go's legacy bridge (server/mrtr.go
// resolveMultiRoundTrip) would then run the elicitation and keep the
// answer in process memory, and re-run the tool with it, so an answer
// landing on another node (URL mode, the LLM-mediated fallback) would not
// reach the call. In URL mode the client's reply is only its consent; the
// call waits on the store for the completion, wherever the page was
// answered, and then sends notifications/elicitation/complete with
// MCPServer.SendElicitationComplete(ctx, session, elicitationID) on the
// session that asked (SendNotificationToSpecificClient when the call that
// asked has already returned, after -32042).
//
// -32042: the tool handler returns mcp.URLElicitationRequiredError{
// Elicitations: ...}; mcp-go's handlerError turns it into the JSON-RPC error
// with its data on these versions only (on 2026-07-28 the code is reserved,
// and URL mode is an input request instead).
//
// Progress while waiting: when the request has
// request.Params.Meta.ProgressToken, the wait sends
// MCPServer.SendNotificationToClient(ctx, "notifications/progress",
// {"progressToken", "progress", "message"}) on its interval. Close on the
// engine ends every wait; mcp-go's RequestElicitation returns when its
// context is done.
//
// # Input requests (2026-07-28)
//
// A call that must ask returns server.NewInputRequestBuilder(sealed).
// Elicit(key, params).ToolResult(), where sealed is elicitvault's
// requestState: sealed, one-shot, bound to the call (tool, arguments,
// subject). The retry carries request.Params.RequestState and
// request.Params.InputResponses (read with server.ElicitationResponse).
// A tampered, replayed or foreign state is JSON-RPC -32602 before the tool
// handler runs. mcp-go has no way to answer -32602 from a hook or a
// middleware (an OnRequestInitialization error is -32600; a handler's error
// is -32603), so such a call begins at the transport, in front of mcp-go:
// an http.Handler reads a tools/call of 2026-07-28 whose params carry one
// of elicitvault's requestStates, builds the call's peer from the request
// (_meta's capabilities, the subject, engine.Sessionless) and calls
// engine.Begin, which verifies and claims the requestState and opens the
// inputResponses; it answers a refusal itself, or passes the request on to
// server.StreamableHTTPServer with the run in the request's context. The
// middleware then runs the handler in that run (its context's values over
// mcp-go's) and finishes it. For stdio the same check runs on each line
// between the reader and server.StdioServer.Listen, and the runs wait in
// the connection's table, by requestState. Every other call begins in the
// middleware.
//
// A URL-mode round whose page is not done answers "still waiting" after
// elicit.Config.URLRoundWait: an input-required result with an empty
// inputRequests and a new requestState. mcp-go v1.2.1 drops the empty map
// when it encodes the result (omitempty), which a client reads as a final,
// empty result; the transports (Handler's, ServeStdio's) put
// "inputRequests": {} back into such a result of elicitvault's on its way
// out, in a JSON response, an SSE event or a stdio line.
//
// mcp-go v1.2.1 drops a notification of a 2026-07-28 call that its
// forwarder takes off the session's channel just as the call returns; the
// peer gives the forwarder a moment after notifications/elicitation/
// complete, which is sent right before the handler returns.
//
// # Installing it, fallbacks, pages
//
// The calls reach the engine through MCPServer.Use (a tool handler
// middleware), which puts the per-call peer in the context, and
// server.WithHooks for the session's end (AddOnUnregisterSession ends its
// waits and deletes what it left pending) and the logging level it set.
// The LLM-mediated fallback's tool, sendElicitationResult, is registered
// with MCPServer.AddTool and shown by a server.WithToolFilter to the
// clients that lack a mode; the middleware answers its calls with
// engine.Answer, whose continuation runs the asking tool's handler as
// registered (without the server's tool middlewares). The URL-mode pages, the browser form and the consent
// page are an http.Handler mounted beside server.NewStreamableHTTPServer
// on the same mux (its WithEndpointPath keeps MCP at /mcp), and served on
// their own listener for a stdio server. elicitvault's hooks (and the otelelicit
// module) see the same events on both SDKs because they are the engine's.
//
// # Tasks (the tasks extension, 2026-07-28)
//
// Server.RunAsTask and StartTask serve io.modelcontextprotocol/tasks as
// elicit.Elicitor.RunAsTask and elicit.StartTask do on the go-sdk, over
// the same records (engine.Tasks: Launch, Serve): a task started
// on an mcp-go node is polled and answered on a go-sdk node, and the
// other way. mcp-go v1.2.1 has the task API of 2025-11-25 only, so the
// extension is served at the transport, beside the requestState check:
// a 2026-07-28 tasks/get, tasks/update or tasks/cancel is answered there
// and never reaches mcp-go; a 2026-07-28 tools/call passes with a table
// in its context, where the middleware leaves the task a call became,
// answering mcp-go with a placeholder result that names it, and the
// transport writes the task (a CreateTaskResult) in the place of the
// response that carries the placeholder. The extension is advertised and
// execution.taskSupport listed through mcp-go's AfterDiscover and
// AfterListTools hooks (not in initialize: the extension is served on
// 2026-07-28 requests only). A task's handler (the tool
// handler middleware's next) runs with the call's context values, not
// its cancellation; within it elicit.Form, elicit.Confirm and elicit.URL
// are the task's input requests.
package mcpgo
