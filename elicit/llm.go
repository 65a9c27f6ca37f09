package elicit

import "github.com/elicitvault/elicitvault/internal/engine"

// The LLM-mediated fallback is the engine's (internal/engine/model.go):
// the stop that hands the elicitation to the model, and FallbackTool,
// which the front-end lists and serves (gosdk.go).

// MetaElicitationPending is the key, in the _meta of a tool result, of the
// LLM-mediated elicitation the call waits for: an object with elicitId
// (FrontMCP's name, which FallbackTool takes), message, and either
// requestedSchema (form) or mode "url" and url. Until the next release it
// also carries the same ID as elicitationId.
const MetaElicitationPending = engine.MetaElicitationPending

// MetaElicitationReplayed is the key, in the _meta of a result of
// FallbackTool, that marks a result given again: the same answer was sent
// twice (its first reply lost, say), and the tool ran once.
const MetaElicitationReplayed = engine.MetaElicitationReplayed

// ErrAnswerInProgress is returned (as a tool error of FallbackTool) while
// another answer to the same elicitation is being used; if that one fails,
// this one can be sent again.
var ErrAnswerInProgress = engine.ErrAnswerInProgress

// ErrAnswered is returned (as a tool error of FallbackTool) for a second
// answer to an LLM-mediated elicitation: among concurrent answers exactly
// one continues the tool.
var ErrAnswered = engine.ErrAnswered
