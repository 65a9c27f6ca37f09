// Package otelelicit traces and measures elicitations with OpenTelemetry,
// through elicit's hooks ([elicit.Hooks], returned by [Hooks]). It is a module of its own, so that elicitvault's
// core never depends on OpenTelemetry: a server that wants telemetry adds
// its hooks to the Elicitor's Config.
//
//	import "github.com/elicitvault/elicitvault/otelelicit"
//
//	h, err := otelelicit.Hooks(nil) // the global tracer and meter providers
//	if err != nil {
//		log.Fatal(err)
//	}
//	ev, err := elicit.New(keys, st, &elicit.Config{Hooks: []elicit.Hooks{h}})
//
// The instrumentation scope of its spans and metrics is
// github.com/elicitvault/elicitvault/otelelicit.
//
// # Spans
//
// Every run of an elicitation's request flow is a span "elicit.request",
// and every run of its result flow a span "elicit.result", children of the
// span in ctx (the tool call's, when the server traces calls). Their
// attributes are the elicitation's mode (elicit.mode: form or url), the
// protocol path (elicit.path: "request" for a blocking elicitation/create
// on 2025-11-25, "input_required" for InputRequiredResult and
// requestState on 2026-07-28), the tool's name (elicit.tool) and the
// outcome (elicit.outcome). Spans never carry session IDs, subjects, user
// identities, messages, URLs or content.
//
// # Metrics
//
//	elicitvault.elicitations.started   counter, by mode and path (on 2026-07-28: the round that asks)
//	elicitvault.elicitations.pending   up-down counter: request flows in progress on this node
//	elicitvault.elicitations.outcomes  counter, by mode, path and outcome: once per answer (its result flow) or failure
//	elicitvault.elicitation.duration   histogram (s) of the request flow, by mode, path and outcome
//	elicitvault.elicitation.errors     counter of flows that failed with an error other than the outcomes below
//
// An elicitation answered on another node than the one that asked (a
// URL-mode page, a 2026-07-28 round awaiting a page) continues the trace of
// the span that asked: its trace context travels sealed in the pending
// record (never in a URL or token), and the node that resumes it starts a
// span "elicit.complete", a child of the asking span, linked to the span
// in its own context if any. Its outcome is resolved, gone (expired or
// answered already) or error.
//
// Outcomes: accepted, declined, cancelled (by the user), timed_out,
// superseded (another question of the session replaced it), input_required
// (a 2026-07-28 round that asked and returned), invalid (an answer refused
// by its schema), error (anything else: a store or transport failure). On
// 2026-07-28 the question and its answer are different rounds of the tool
// call, possibly on different nodes: the duration measures each round's
// request flow, not the user's think time.
package otelelicit

import (
	"context"
	"errors"
	"time"

	"github.com/elicitvault/elicitvault/elicit"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// scopeName is the instrumentation scope of the spans and metrics.
const scopeName = "github.com/elicitvault/elicitvault/otelelicit"

// Options chooses the providers. A nil Options, or a nil field, uses the
// global provider of the otel package; a nil Propagator, W3C Trace
// Context.
type Options struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// Propagator carries the trace context of an elicitation, sealed in
	// its pending record, to the node that completes it.
	Propagator propagation.TextMapPropagator
}

// The attribute keys (the package documentation lists them).
const (
	attrMode    = attribute.Key("elicit.mode")
	attrPath    = attribute.Key("elicit.path")
	attrTool    = attribute.Key("elicit.tool")
	attrOutcome = attribute.Key("elicit.outcome")
)

type instruments struct {
	prop     propagation.TextMapPropagator
	tracer   trace.Tracer
	started  metric.Int64Counter
	pending  metric.Int64UpDownCounter
	outcomes metric.Int64Counter
	duration metric.Float64Histogram
	errors   metric.Int64Counter
	resets   metric.Int64Counter
}

// Hooks returns the hooks that trace and measure every elicitation of the
// Elicitor they are given to.
func Hooks(opts *Options) (elicit.Hooks, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.TracerProvider == nil {
		o.TracerProvider = otel.GetTracerProvider()
	}
	if o.MeterProvider == nil {
		o.MeterProvider = otel.GetMeterProvider()
	}
	m := o.MeterProvider.Meter(scopeName)
	if o.Propagator == nil {
		o.Propagator = propagation.TraceContext{}
	}
	in := &instruments{prop: o.Propagator, tracer: o.TracerProvider.Tracer(scopeName)}
	var err, e error
	in.started, e = m.Int64Counter("elicitvault.elicitations.started", metric.WithDescription("Elicitations asked"))
	err = errors.Join(err, e)
	in.pending, e = m.Int64UpDownCounter("elicitvault.elicitations.pending", metric.WithDescription("Request flows in progress on this node"))
	err = errors.Join(err, e)
	in.outcomes, e = m.Int64Counter("elicitvault.elicitations.outcomes", metric.WithDescription("Elicitation flows ended, by outcome"))
	err = errors.Join(err, e)
	in.duration, e = m.Float64Histogram("elicitvault.elicitation.duration", metric.WithUnit("s"), metric.WithDescription("Duration of the request flow"))
	err = errors.Join(err, e)
	in.errors, e = m.Int64Counter("elicitvault.elicitation.errors", metric.WithDescription("Flows failed by an error: store, transport or hook"))
	err = errors.Join(err, e)
	in.resets, e = m.Int64Counter("elicitvault.store.resets", metric.WithDescription("Times this node found that the store lost its data (its epoch changed); state issued before is refused"))
	err = errors.Join(err, e)
	if err != nil {
		return elicit.Hooks{}, err
	}
	return elicit.Hooks{AroundRequest: in.aroundRequest, AroundResult: in.aroundResult, Carry: in.carry, Resume: in.resume,
		StoreReset: func(ctx context.Context) { in.resets.Add(ctx, 1) }}, nil
}

// path returns the protocol path of r's call.
func path(r *elicit.Request) string {
	if r.Call != nil && r.Call.Protocol >= "2026-07-28" {
		return "input_required"
	}
	return "request"
}

func baseAttrs(r *elicit.Request) []attribute.KeyValue {
	kv := []attribute.KeyValue{attrMode.String(string(r.Mode)), attrPath.String(path(r))}
	if r.Call != nil {
		kv = append(kv, attrTool.String(r.Call.Tool))
	}
	return kv
}

// outcome names how a flow ended.
func outcome(res *elicit.Response, err error) string {
	switch {
	case err == nil && res != nil:
		switch res.Action {
		case elicit.Accept:
			return "accepted"
		case elicit.Decline:
			return "declined"
		case elicit.Cancel:
			return "cancelled"
		}
		return "error"
	case errors.Is(err, elicit.ErrInputRequired):
		return "input_required"
	case errors.Is(err, elicit.ErrTimeout):
		return "timed_out"
	case errors.Is(err, elicit.ErrReplaced):
		return "superseded"
	case errors.Is(err, elicit.ErrInvalidContent):
		return "invalid"
	}
	return "error"
}

func (in *instruments) aroundRequest(ctx context.Context, r *elicit.Request, next elicit.RequestFunc) (*elicit.Response, error) {
	attrs := baseAttrs(r)
	set := metric.WithAttributes(attrs...)
	ctx, span := in.tracer.Start(ctx, "elicit.request", trace.WithAttributes(attrs...), trace.WithSpanKind(trace.SpanKindInternal))
	defer span.End()
	blocking := path(r) == "request"
	if blocking {
		in.started.Add(ctx, 1, set)
	}
	in.pending.Add(ctx, 1, set)
	start := time.Now()
	res, err := next(ctx, r)
	in.pending.Add(ctx, -1, set)
	o := outcome(res, err)
	if !blocking && o == "input_required" {
		// On 2026-07-28 the flow runs in every round: the round that
		// asks starts the elicitation.
		in.started.Add(ctx, 1, set)
	}
	// An answer's outcome is counted by the result flow, which validates
	// it; the request flow counts only how it failed.
	in.end(ctx, span, attrs, o, err != nil && o != "input_required", time.Since(start))
	return res, err
}

func (in *instruments) aroundResult(ctx context.Context, r *elicit.Request, raw *elicit.Response, next elicit.ResultFunc) (*elicit.Response, error) {
	attrs := baseAttrs(r)
	ctx, span := in.tracer.Start(ctx, "elicit.result", trace.WithAttributes(attrs...))
	defer span.End()
	res, err := next(ctx, r, raw)
	in.end(ctx, span, attrs, outcome(res, err), true, -1)
	return res, err
}

// end records a flow's outcome o on its span, in the outcome counter if
// count, and its duration d unless d < 0.
func (in *instruments) end(ctx context.Context, span trace.Span, attrs []attribute.KeyValue, o string, count bool, d time.Duration) {
	span.SetAttributes(attrOutcome.String(o))
	all := metric.WithAttributes(append(attrs, attrOutcome.String(o))...)
	if count {
		in.outcomes.Add(ctx, 1, all)
	}
	if d >= 0 {
		in.duration.Record(ctx, d.Seconds(), all)
	}
	if o == "error" {
		// The error's text is left out: only the category.
		span.SetStatus(codes.Error, "elicitation failed")
		in.errors.Add(ctx, 1, metric.WithAttributes(attrs...))
	}
}

// carry returns the trace context of ctx, for the pending record.
func (in *instruments) carry(ctx context.Context) map[string]string {
	m := propagation.MapCarrier{}
	in.prop.Inject(ctx, m)
	return m
}

// resume starts the span of the work that resumes an elicitation, as a
// child of the span that asked it.
func (in *instruments) resume(ctx context.Context, mode elicit.Mode, carried map[string]string) (context.Context, func(error)) {
	opts := []trace.SpanStartOption{trace.WithAttributes(attrMode.String(string(mode))), trace.WithSpanKind(trace.SpanKindInternal)}
	parent := in.prop.Extract(context.Background(), propagation.MapCarrier(carried))
	if remote := trace.SpanContextFromContext(parent); remote.IsValid() {
		if local := trace.SpanContextFromContext(ctx); local.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: local}))
		}
		ctx = trace.ContextWithRemoteSpanContext(ctx, remote)
	}
	ctx, span := in.tracer.Start(ctx, "elicit.complete", opts...)
	return ctx, func(err error) {
		o := "resolved"
		switch {
		case err == nil:
		case errors.Is(err, elicit.ErrUnknownElicitation):
			o = "gone"
		case errors.Is(err, elicit.ErrTimeout):
			o = "timed_out"
		default:
			o = "error"
			span.SetStatus(codes.Error, "elicitation failed")
		}
		span.SetAttributes(attrOutcome.String(o))
		span.End()
	}
}
