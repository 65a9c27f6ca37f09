package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/elicitvault/elicitvault/internal/keyschedule"
	"github.com/elicitvault/elicitvault/internal/oneshot"
	"github.com/elicitvault/elicitvault/store"
)

// The LLM-mediated fallback. A handler's elicitation that the client
// cannot receive is recorded in its round (viaModel) and the handler
// returns ErrInputRequired; Run.Finish then seals the elicitation, with
// the tool's name and arguments, the answers of the earlier runs and the
// handler's state, in a pending record bound to the subject and the
// session (pendingStop), and answers the call with instructions for the
// model. The model calls FallbackTool; on whichever node that call lands,
// Engine.Answer opens the pending record (which only opens for the same
// subject and session), validates the answer, marks it used with
// PutIfAbsent (one winner), removes the record and runs the original tool
// again with the answers in its round (answer). That run may stop again,
// for the next elicitation.

// The keys, in the _meta of a tool result, of the LLM-mediated
// elicitation the call waits for, and of a result of FallbackTool given
// again (package elicit exports them).
const (
	MetaElicitationPending  = "elicitationPending"
	MetaElicitationReplayed = "elicitationReplayed"
)

var (
	// ErrAnswerInProgress is an answer while another answer to the same
	// elicitation is being used.
	ErrAnswerInProgress = errors.New("elicit: another answer to this elicitation is being processed; send it again in a few seconds if the tool does not answer")

	// ErrAnswered is a second answer to an LLM-mediated elicitation.
	ErrAnswered = errors.New("elicit: the elicitation was already answered")

	// ErrSecretUnavailable is an answer this node cannot use up safely:
	// the secret that keys its one-shot marker is not in its keyring.
	ErrSecretUnavailable = errors.New("elicit: the secret this elicitation was asked under is not loaded on this node")
)

// errNotForThisClient refuses FallbackTool from a client that can elicit.
var errNotForThisClient = errors.New("elicit: " + FallbackTool + " is only for clients that cannot elicit; this client answers elicitations itself")

// errPageNotAnswered refuses an accept of a URL-mode elicitation that the
// user has not answered on its page yet: only the page accepts.
var errPageNotAnswered = errors.New("elicit: the user has not answered on the page yet; once they have, send this again (a refusal may be sent at any time)")

// modelAsk is the LLM-mediated elicitation a run stopped at: a form, or
// (mode URL) a link to give the user.
type modelAsk struct {
	id, fp, message string
	mode            string
	schema          []byte
	url             string
	ttl             time.Duration
}

// modelPath is the LLM-mediated fallback: the pending record the model's
// answer opens, and the continuation of the tool.
type modelPath struct{ e *Engine }

func (pa modelPath) deliver(_ context.Context, rd *round, q *Ask) (*Response, error) {
	if q.Mode == ModeURL {
		return pa.urlViaModel(rd, q)
	}
	return pa.viaModel(rd, q)
}

// viaModel is the LLMMediated fallback's request flow (within rd.replay):
// it records the elicitation and stops the run.
func (pa modelPath) viaModel(rd *round, q *Ask) (*Response, error) {
	rd.pending = &modelAsk{id: q.ID, fp: fingerprint(q), message: q.Message, mode: ModeForm, schema: q.Schema, ttl: q.TTL}
	return nil, ErrInputRequired
}

// urlViaModel is URL mode for a client without it, with the LLMMediated
// fallback (within rd.replay): the model is given the link, and, once the
// user is done on the page, calls FallbackTool with the elicitation's ID,
// as for a form. Only that call continues the tool, with the answer the
// page gave: a link answers only the call that asked for it, never another
// call of the same tool, another client's included.
func (pa modelPath) urlViaModel(rd *round, q *Ask) (*Response, error) {
	link, err := issueURL(pa.e, q)
	if err != nil {
		return nil, err
	}
	rd.pending = &modelAsk{id: q.ID, fp: fingerprint(q), message: q.Message, mode: ModeURL, url: link, ttl: q.TTL}
	return nil, ErrInputRequired
}

// pendingStop seals the elicitation a run stopped at and returns the
// tool result that hands it to the model.
func (pa modelPath) pendingStop(ctx context.Context, peer Peer, rd *round) (*Stop, error) {
	e := pa.e
	info := peer.Call()
	p := rd.pending
	expiry := e.Now().Add(p.ttl)
	s := e.Slot(info.Who, p.id, expiry)
	rec := &pendingRecord{
		Mode: p.mode, Via: ViaModel, Schema: p.schema, Tool: info.Tool, Expiry: expiry.UnixMilli(),
		FP: p.fp, Args: info.Arguments, Answers: rd.answers, State: rd.state,
		Marker: e.keys.PrimaryKeyID().String(),
	}
	if p.mode == ModeURL {
		rec.Message, rec.Server = p.message, e.cfg.ServerName
	}
	if err := putPending(ctx, e, s, rec); err != nil {
		return nil, err
	}
	if err := s.Claim(ctx); err != nil {
		s.End(ctx)
		return nil, err
	}
	e.LeaveFor(peer, s)
	if p.mode == ModeURL {
		return &Stop{Pending: pendingURL(p)}, nil
	}
	return &Stop{Pending: &Pending{
		Text: instructions(p),
		Meta: map[string]any{MetaElicitationPending: map[string]any{
			"elicitId":        p.id,
			"elicitationId":   p.id, // the key of earlier releases, kept for one release
			"message":         p.message,
			"requestedSchema": json.RawMessage(p.schema),
		}},
	}}, nil
}

// instructions tells the model what to do with an LLM-mediated
// elicitation. Everything it needs is in the text: many clients do not
// show _meta to the model.
func instructions(p *modelAsk) string {
	var b strings.Builder
	fmt.Fprintf(&b, "This tool needs an answer from the user before it can continue, and this client cannot ask for it. "+
		"Ask the user the question below, show them what they may answer, and wait for their reply. "+
		"Do not answer on their behalf, do not guess, and do not reuse an earlier answer.\n\n")
	fmt.Fprintf(&b, "Question: %s\n\n", p.message)
	fmt.Fprintf(&b, "The answer is a JSON object matching this schema:\n%s\n\n", p.schema)
	fmt.Fprintf(&b, "Then call the tool %q with {\"elicitId\": %q, \"action\": \"accept\", \"content\": {...the answer...}}; "+
		"use \"action\": \"decline\" if the user refuses to answer, or \"cancel\" if they dismiss the question (both without content). "+
		"The result of that call is the result of this tool. If it reports an invalid answer, ask the user again and resend.",
		FallbackTool, p.id)
	return b.String()
}

// pendingURL is the tool result that gives the model the link of a
// URL-mode elicitation.
func pendingURL(p *modelAsk) *Pending {
	return &Pending{Text: "This tool needs the user to complete a step in their browser, and this client cannot open the page itself. " +
		"Give the user this link and tell them what it is for; do not open it yourself.\n\n" +
		"Purpose: " + p.message + "\nLink: " + p.url + "\n\n" +
		fmt.Sprintf("When the user says they are done, call the tool %q with {\"elicitId\": %q, \"action\": \"accept\"}; "+
			"use \"action\": \"decline\" if they refuse to open the page, or \"cancel\" if they dismiss it. "+
			"The page decides: the result of that call is the result of this tool, with the user's choice there. "+
			"Calling this tool again asks again, with a new link.", FallbackTool, p.id),
		Meta: map[string]any{MetaElicitationPending: map[string]any{
			"elicitId":      p.id,
			"elicitationId": p.id,
			"mode":          ModeURL,
			"message":       p.message,
			"url":           p.url,
		}},
	}
}

// fallbackInput is the input of FallbackTool.
type fallbackInput struct {
	ElicitID string          `json:"elicitId"`
	Action   string          `json:"action"`
	Content  json.RawMessage `json:"content,omitempty"`
}

// answer serves FallbackTool (Engine.Answer): it checks, validates and
// uses up the answer to an LLM-mediated elicitation, then continues the
// tool that asked. Refusals are tool errors, which the model reads; the
// pending elicitation stays open after an invalid answer.
func (pa modelPath) answer(ctx context.Context, peer Peer, cont Continue) (*Answer, error) {
	e := pa.e
	info := peer.Call()
	// A client that lacks a mode gets this tool: for a link, and for what
	// the continuation of its answer asks (which, on 2026-07-28, cannot
	// stop for input requests and comes through the model too).
	if info.FormMode && info.URLMode {
		return toolError(errNotForThisClient), nil
	}
	var in fallbackInput
	if err := json.Unmarshal(info.Arguments, &in); err != nil || in.ElicitID == "" {
		return toolError(fmt.Errorf("%w: %s takes {elicitId, action, content}", ErrMalformed, FallbackTool)), nil
	}
	// The record opens only for the subject and session it was sealed
	// for: another caller finds nothing, which is the same error as an
	// elicitation that never existed.
	s := e.Slot(info.Who, in.ElicitID, time.Time{})
	var rec pendingRecord
	if err := s.Get(ctx, PurposePending, &rec); err != nil {
		if errors.Is(err, ErrUnknownElicitation) {
			if res, ok := pa.replayLookup(ctx, s, &in); ok {
				return res, nil
			}
			return toolError(err), nil
		}
		return nil, err
	}
	s.Expiry = time.UnixMilli(rec.Expiry)
	if rec.Via != ViaModel || (rec.Mode != ModeForm && rec.Mode != ModeURL) || !s.Expiry.After(e.Now()) {
		return toolError(ErrUnknownElicitation), nil
	}

	a := answered{FP: rec.FP, ID: in.ElicitID, Action: in.Action}
	switch {
	case rec.Mode == ModeURL:
		// The page decides: its answer, once given, is the answer; before
		// it, the model may only refuse for the user.
		var page Result
		err := s.Get(ctx, PurposeResult, &page)
		switch {
		case err == nil && !page.Superseded:
			a.Action = page.Action
		case err != nil && !errors.Is(err, ErrUnknownElicitation):
			return nil, err
		case in.Action == Accept:
			return toolError(errPageNotAnswered), nil
		case in.Action != Decline && in.Action != Cancel:
			return toolError(fmt.Errorf("%w: action must be accept, decline or cancel", ErrMalformed)), nil
		}
		in.Action, in.Content = a.Action, nil // what the marker records
	case in.Action == Accept:
		content, err := ValidateAnswer(rec.Schema, in.Content, e.cfg.MaxContentSize)
		if err != nil {
			return toolError(err), nil
		}
		a.Content = content
	case in.Action == Decline, in.Action == Cancel:
		// Content that comes with a refusal is dropped unread.
	default:
		return toolError(fmt.Errorf("%w: action must be accept, decline or cancel", ErrMalformed)), nil
	}

	mk, err := pa.markerKey(s, rec.Marker)
	if err != nil {
		return toolError(err), nil
	}
	fp := pa.answerFP(s, rec.Marker, &in)
	// The answer is used up (Commit) before the tool continues; a claim
	// that fails before (a store fault) is given back, or ends with its
	// lease, so that a resend of the answer completes it.
	use, err := oneshot.Claim(ctx, e.store, mk, fp, oneshot.Options{Lease: e.cfg.lease(), Expiry: s.Expiry, Now: e.Now})
	var replayed *oneshot.Replayed
	switch {
	case errors.As(err, &replayed):
		return pa.replayed(s, replayed.Result), nil
	case errors.Is(err, store.ErrInvalidArgument):
		return toolError(ErrUnknownElicitation), nil // expired meanwhile
	case errors.Is(err, oneshot.ErrUsed):
		return toolError(ErrAnswered), nil
	case errors.Is(err, oneshot.ErrBusy):
		return toolError(ErrAnswerInProgress), nil
	case err != nil:
		return nil, fmt.Errorf("elicit: store: %w", err)
	}
	if err := use.Commit(ctx); err != nil {
		use.Release(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("elicit: store: %w", err)
	}
	// The answer is used up: the tool continues now, before any store
	// work that a dying node or a store fault could cut. The pending
	// record and the session's pointer are removed afterwards (a newer
	// elicitation of the continued tool supersedes them meanwhile, and
	// their expiry ends them if this node does not get there).
	defer func() {
		ctx := context.WithoutCancel(ctx)
		s.End(ctx)
		s.Release(ctx)
	}()

	rd := &round{e: e, answers: append(rec.Answers, a), state: rec.State, continued: true}
	cpeer := continued(peer, rec.Tool, rec.Args)
	cause := cont(WithPeer(rd.context(ctx), cpeer), rec.Tool, rec.Args)
	stop, err := rd.stop(ctx, cpeer, cause)
	if err != nil {
		return nil, err
	}
	return &Answer{Stop: stop, Keep: func(kctx context.Context, result any) {
		// Kept, sealed, with the marker: a resend of this answer (its
		// reply lost) gets this result instead of running the tool again.
		if b, merr := json.Marshal(result); merr == nil && len(b) <= e.cfg.MaxPendingSize {
			if sealed, serr := e.keys.SealRecord(s.Binding(PurposeReplay), b, s.Expiry); serr == nil {
				use.Finish(context.WithoutCancel(kctx), sealed)
			}
		}
	}}, nil
}

// continuedPeer is the call p continued with the original tool and its
// arguments: the continuation of an LLM-mediated elicitation.
type continuedPeer struct {
	Peer
	info CallInfo
}

func continued(p Peer, tool string, args json.RawMessage) *continuedPeer {
	c := &continuedPeer{Peer: p, info: *p.Call()}
	c.info.Tool, c.info.Arguments = tool, args
	return c
}

func (c *continuedPeer) Call() *CallInfo { return &c.info }

// WatchEnd passes on to the call's peer.
func (c *continuedPeer) WatchEnd(ended func()) {
	if w, ok := c.Peer.(SessionWatcher); ok {
		w.WatchEnd(ended)
	}
}

// answerFP is the fingerprint of an answer, keyed under the marker's
// secret: the marker's value shows storage nothing of the answer.
func (pa modelPath) answerFP(s *Slot, keyID string, in *fallbackInput) []byte {
	e := pa.e
	var content any
	json.Unmarshal(in.Content, &content)
	canon, _ := json.Marshal(struct {
		A string `json:"a"`
		C any    `json:"c,omitempty"`
	}{in.Action, content})
	if in.Action != Accept {
		canon, _ = json.Marshal(struct {
			A string `json:"a"`
		}{in.Action})
	}
	b := s.Binding(PurposeAnswer)
	b.RecordID = s.ID + "\x00" + string(canon)
	if id, err := keyschedule.ParseKeyID(keyID); err == nil {
		if k, ok := e.keys.StoreKeyUnder(id, b); ok {
			return []byte(k)
		}
	}
	return nil
}

// replayLookup finds, for an answer to an elicitation that is no longer
// pending, the result its first sending got: the same answer resent after
// its reply was lost. It looks under every secret of the keyring.
func (pa modelPath) replayLookup(ctx context.Context, s *Slot, in *fallbackInput) (*Answer, bool) {
	e := pa.e
	for _, id := range e.keys.KeyIDs() {
		mk, ok := e.keys.StoreKeyUnder(id, s.Binding(PurposeUsed))
		if !ok {
			continue
		}
		if sealed, err := oneshot.Lookup(ctx, e.store, mk, pa.answerFP(s, id.String(), in)); err == nil {
			return pa.replayed(s, sealed), true
		}
	}
	return nil, false
}

// replayed opens a kept result and marks it as a replay
// (MetaElicitationReplayed).
func (pa modelPath) replayed(s *Slot, sealed []byte) *Answer {
	pt, err := pa.e.keys.OpenRecord(s.Binding(PurposeReplay), sealed)
	var res map[string]json.RawMessage
	if err != nil || json.Unmarshal(pt, &res) != nil || res == nil {
		return toolError(ErrAnswered)
	}
	var meta map[string]any
	if m, ok := res["_meta"]; ok && json.Unmarshal(m, &meta) != nil {
		return toolError(ErrAnswered)
	}
	if meta == nil {
		meta = map[string]any{}
	}
	meta[MetaElicitationReplayed] = true
	b, err := json.Marshal(meta)
	if err != nil {
		return toolError(ErrAnswered)
	}
	res["_meta"] = b
	out, err := json.Marshal(res)
	if err != nil {
		return toolError(ErrAnswered)
	}
	return &Answer{Replayed: out}
}

// markerKey is the store key of the one-shot marker of an LLM-mediated
// answer: blinded under the secret that was primary when it was asked,
// which every node that still holds that secret agrees on. A node without
// it fails closed (ErrSecretUnavailable): keying the marker under its own
// primary would let it and a node that holds the secret both win.
func (pa modelPath) markerKey(s *Slot, keyID string) (string, error) {
	id, err := keyschedule.ParseKeyID(keyID)
	if err != nil {
		return "", ErrUnknownElicitation
	}
	key, ok := pa.e.keys.StoreKeyUnder(id, s.Binding(PurposeUsed))
	if !ok {
		return "", ErrSecretUnavailable
	}
	return key, nil
}

// toolError is err as the tool error result of FallbackTool. Every error
// of the engine is free of session IDs, subjects and answers.
func toolError(err error) *Answer {
	return &Answer{ToolError: err.Error()}
}
