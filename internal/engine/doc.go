// Package engine is what an elicitation is, apart from the MCP SDK that
// carries it. It imports no MCP SDK (TestEngineKnowsNoSDK holds that), so
// that each SDK's front-end (the go-sdk one is package elicit; the
// mark3labs/mcp-go one, module mcpgo) maps its requests onto the same
// records, and one store and one secret serve a deployment that mixes
// them.
//
// What it holds today:
//
//   - Identity: whom a tool call's state belongs to. A front-end computes
//     it once per call: the authenticated user as Subject; as Session, the
//     transport's session ID (TransportSession), a process-local ID kept
//     for a connection without one (LocalSession: stdio, in-memory), or
//     Sessionless on a stateless HTTP server. Bindings, blinded store keys
//     and the quota client (Identity.Client) derive from it.
//   - Engine: the keyring, the store, the token service, the pending
//     quotas and the tool calls in progress (Track, Close, EndCalls) of
//     one server, configured by Config (elicit.New maps its Config onto
//     it; its functions reach what stays in package elicit: the hooks'
//     Carry and Resume, the Elicitor in the handler's context, the
//     browser form's page).
//   - Ask, Deliver: one elicitation, after the front-end's hooks. Deliver
//     replays the answer of an earlier run of the call (round.go), or
//     chooses its delivery path once (ask.go), one type and file each:
//     the blocking request (blocking.go), input requests with a sealed
//     requestState (input.go), -32042 (urlrequired.go), the LLM-mediated
//     fallback (model.go), the browser form (browser.go), a task's input
//     and the policy (the front-end's functions in Ask). ResolveURL
//     completes a URL-mode elicitation, for the front-end's pages and
//     for callbacks served elsewhere (elicit/oauth).
//   - Peer: one tool call as its front-end presents it (peer.go); the
//     operations around a call (Begin, Run, Answer; frontend.go).
//   - Slot: one elicitation's place in the store. Begin subscribes to its
//     channel, writes the sealed pending record (counted against the
//     quotas, per Identity.Client) and makes it the session's one pending
//     elicitation, superseding the previous one; Get, Take, Put, Resolve
//     and Publish read and write its records; End removes them. LeaveFor and
//     SessionEnded delete what a session left pending when it ends. A
//     Local slot (a blocking form) writes nothing: its session lives in
//     this process, which keeps its place and tells it on Superseded.
//   - requestState (2026-07-28): BindState binds it to the call's
//     identity, tool and arguments; IssueState seals it; ClaimState
//     verifies and claims it once (ErrBadState for every reason, which a
//     front-end answers with -32602).
//   - Task (the tasks extension, io.modelcontextprotocol/tasks): CreateTask
//     writes a task's sealed record, durable before the client hears of
//     it; the node running its handler alone rewrites it (Save); View is
//     what tasks/get shows, on any node; Answer writes the answers of
//     tasks/update, validated by the front-end's check, sealed and written
//     once each (a replay is ErrTaskAnswered), which the runner takes once
//     (TakeAnswer) after listing them as answered; Cancel and Cancelled.
//     Another subject's, another session's or an unknown task is
//     ErrUnknownTask. Above the records, what a front-end calls
//     (Engine.Tasks; task_run.go, task_wire.go): Launch creates a task
//     and runs its body (the tool handler) in the background, where
//     TaskRunFrom gives the TaskRun whose Ask (an Ask.Task) lists an
//     input request and waits for its answer; Serve answers tasks/get,
//     tasks/update (the answers validated against the input request
//     they answer) and tasks/cancel; TaskTools, TaskWire, NoTasksError
//     and TaskNameMatches are the rest of the extension's wire. Each
//     front-end decodes its SDK's requests and encodes these results.
//
// How a front-end plugs in. Package elicit builds the Engine (elicit.New
// calls New with its Config); a front-end takes it from the Elicitor ((*elicit.Elicitor).Engine) and
// calls the same operations the go-sdk front-end (elicit/gosdk.go) calls:
//
//   - Per tool call, implement Peer: compute the Identity once (the
//     session: TransportSession, LocalSession kept per connection, or
//     Sessionless on a stateless server; the subject from the
//     authentication), the protocol and the elicitation modes from this
//     request (2026-07-28's _meta overrides the session's), the logging
//     level, the progress token; Elicit sends elicitation/create and
//     returns the client's raw reply (*ClientError for a JSON-RPC error).
//     A Peer whose front-end cannot be told of a session's end implements
//     SessionWatcher; one that is told calls SessionEnded.
//   - A call whose requestState OwnsState refuses is not the engine's:
//     run the handler alone. A call of FallbackTool (when
//     ListsFallbackTool would list it) goes to Answer, with a Continue
//     that runs the named tool's handler with the given arguments and
//     context, keeps its result, and returns its error (or its tool
//     error result's). Answer's result is a tool error text, a replayed
//     result (wire JSON), a Stop, or the continuation's result; call
//     Answer.Keep with the result sent.
//   - Every other tool call: Begin(ctx, peer, requestState,
//     inputResponses as raw JSON by key) before the handler (an
//     *InvalidParamsError is JSON-RPC -32602, nothing ran; ErrClosed
//     after Close); run the handler with the returned context; then
//     Run.Finish(ctx, the handler's error or its tool error result's).
//     A nil Stop passes the handler's result; otherwise send the Stop:
//     an input-required result (InputRequests, RequestState), a complete
//     tool result with Pending.Text and Pending.Meta as _meta, or the
//     error -32042 with URLRequired. Defer Run.End for a handler that
//     panics.
//   - tools/list: add FallbackTool (FallbackToolTitle,
//     FallbackToolDescription, FallbackToolSchema) on the last page when
//     ListsFallbackTool(form, url) says so for the request's modes.
//   - Close ends the calls in progress (elicit's Close calls it);
//     EndCalls ends those of one identity (a DELETE of the session).
//
// The engine also holds the wait for an answer (Slot.Await, ResultReader,
// WaitLocal/Handoff, WaitErr) and the validation of an answer
// against its form (ValidateAnswer, over internal/form). What stays in
// package elicit is its vocabulary (Request, Response, options), the
// hooks around Deliver and the result flow, the go-sdk's side of the
// tasks extension (RunAsTask, StartTask, tasks/* as go-sdk methods; the
// input of a task is the engine's TaskRun.Ask, given as Ask.Task), and
// the pages.
package engine
