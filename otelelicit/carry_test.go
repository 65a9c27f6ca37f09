package otelelicit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/otelelicit"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// Carry on the node that asks and Resume on the node that completes (two
// tracer providers, as two processes): the completing span is a child of
// the asking one, in its trace, linked to the span it ran in.
func TestCarryResume(t *testing.T) {
	recA, recB := tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
	tpA := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recA))
	tpB := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recB))
	hA, err := otelelicit.Hooks(&otelelicit.Options{TracerProvider: tpA})
	if err != nil {
		t.Fatal(err)
	}
	hB, err := otelelicit.Hooks(&otelelicit.Options{TracerProvider: tpB})
	if err != nil {
		t.Fatal(err)
	}

	ctx, asking := tpA.Tracer("test").Start(context.Background(), "ask")
	carried := hA.Carry(ctx)
	asking.End()
	if carried["traceparent"] == "" || len(carried) > 2 {
		t.Fatalf("carried %v, want a traceparent", carried)
	}

	local, page := tpB.Tracer("test").Start(context.Background(), "page")
	rctx, end := hB.Resume(local, elicit.ModeURL, carried)
	if got := trace.SpanContextFromContext(rctx); got.TraceID() != asking.SpanContext().TraceID() {
		t.Errorf("the resumed context is in trace %s, want %s", got.TraceID(), asking.SpanContext().TraceID())
	}
	end(nil)
	page.End()

	var complete sdktrace.ReadOnlySpan
	for _, s := range recB.Ended() {
		if s.Name() == "elicit.complete" {
			complete = s
		}
	}
	if complete == nil {
		t.Fatal("no elicit.complete span")
	}
	if complete.Parent().SpanID() != asking.SpanContext().SpanID() || !complete.Parent().IsRemote() {
		t.Errorf("elicit.complete's parent is %v, want the asking span %v", complete.Parent().SpanID(), asking.SpanContext().SpanID())
	}
	if l := complete.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != page.SpanContext().SpanID() {
		t.Errorf("elicit.complete's links %v, want the page's span", l)
	}
	attrs := map[string]string{}
	for _, kv := range complete.Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	if attrs["elicit.mode"] != "url" || attrs["elicit.outcome"] != "resolved" || len(attrs) != 2 {
		t.Errorf("attributes %v", attrs)
	}

	// Nothing carried (or garbage): a span of the node's own.
	_, end = hB.Resume(context.Background(), elicit.ModeURL, map[string]string{"traceparent": "garbage"})
	end(errors.Join(elicit.ErrUnknownElicitation))
	last := recB.Ended()[len(recB.Ended())-1]
	if last.Parent().IsValid() || last.SpanContext().TraceID() == asking.SpanContext().TraceID() {
		t.Errorf("a garbage traceparent gave parent %v", last.Parent())
	}
}
