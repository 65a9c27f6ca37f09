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
//   - Engine: the keyring, the store, the token service and the pending
//     quotas of one server. New takes a URLEnder, the front-end that ends
//     the URL-mode elicitations it asked (EndURL), for callbacks served
//     elsewhere (elicit/oauth).
//   - Slot: one elicitation's place in the store. Begin subscribes to its
//     channel, writes the sealed pending record (counted against the
//     quotas, per Identity.Client) and makes it the session's one pending
//     elicitation, superseding the previous one; Get, Take, Put, Resolve
//     and Publish read and write its records; End removes them. Leave and
//     SessionEnded delete what a session left pending when it ends. A
//     Local slot (a blocking form) writes nothing: its session lives in
//     this process, which keeps its place and tells it on Superseded.
//   - requestState (2026-07-28): BindState binds it to the call's
//     identity, tool and arguments; IssueState seals it; ClaimState
//     verifies and claims it once (ErrBadState for every reason, which a
//     front-end answers with -32602).
//
// How a front-end plugs in, today: create one Engine per server with New
// (elicit.New does; an Elicitor's Engine method returns it), compute the
// Identity of each tool call once from the SDK's request (session ID,
// authenticated user, stateless or not), and use Slot for an
// elicitation's records, BindState/IssueState/ClaimState for the
// requestState. The pending record's and the result's JSON are still the
// go-sdk front-end's (package elicit: pendingRecord, resultRecord), as are
// the wait, the answer's validation and the delivery paths; they move here
// next (issue 19, stage C), behind a per-call interface the front-end
// implements to send requests, notifications and progress to its client.
package engine
