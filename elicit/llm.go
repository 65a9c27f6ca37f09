package elicit

// The LLM-mediated fallback is the engine's (internal/engine/model.go):
// the stop that hands the elicitation to the model, and
// engine.FallbackTool, which the front-end lists and serves (gosdk.go).
// The keys of its _meta (engine.MetaElicitationPending, "elicitationPending";
// engine.MetaElicitationReplayed) and its errors (engine.ErrAnswered,
// engine.ErrAnswerInProgress) reach the model and the client, not a Go
// caller: they are the engine's.
