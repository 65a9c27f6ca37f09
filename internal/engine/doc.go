// Package engine is what an elicitation is, apart from the MCP SDK that
// carries it: the identity of a tool call, the keys and the store its
// sealed state lives in, the tokens of its callbacks. It imports no MCP
// SDK (TestEngineKnowsNoSDK holds that), so that each SDK's front-end (the
// go-sdk one in package elicit) maps its requests onto the same records,
// and one store and one secret serve a deployment that mixes them.
//
// A front-end computes a call's Identity once, when the call arrives
// (the authenticated user; the transport's session, TransportSession; a
// process-local LocalSession for connections without one; Sessionless on
// a stateless HTTP server), creates one Engine with New, and passes both
// to the engine's operations. Packages built on a front-end (elicit/oauth)
// take the Engine and the Identity from it rather than computing their
// own.
package engine
