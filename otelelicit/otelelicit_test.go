package otelelicit_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/elicit/elicittest"
	"github.com/elicitvault/elicitvault/internal/fronttest"
	"github.com/elicitvault/elicitvault/otelelicit"
	"github.com/elicitvault/elicitvault/store"
	"github.com/elicitvault/elicitvault/store/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// scope is the instrumentation scope the hooks must report: the package's
// import path, as OpenTelemetry asks of an instrumentation library.
const scope = "github.com/elicitvault/elicitvault/otelelicit"

type order struct {
	Item string `json:"item"`
}

// TestHooks runs a form elicitation, accepted then declined, at both
// protocol versions through a real go-sdk client and server, and checks
// the spans and metrics the hooks record: mode, path and outcome, and
// nothing of the content, the session or the message.
func TestHooks(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	hooks, err := otelelicit.Hooks(&otelelicit.Options{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	s, h, _ := newShop(t, hooks)
	mcp.AddTool(s, &mcp.Tool{Name: "order"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		o, err := elicit.Form[order](ctx, "Which secret-message item?")
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(o.Action)}}}, nil, nil
	})
	elicittest.Call(t, h, "order", nil, elicittest.Accept(map[string]any{"item": "secret-content"}))
	elicittest.Call(t, h, "order", nil, elicittest.Decline())

	got := map[string]int{} // "name path outcome" → spans
	for _, sp := range spans.Ended() {
		if n := sp.InstrumentationScope().Name; n != scope {
			t.Errorf("span %s: instrumentation scope %q, want %q", sp.Name(), n, scope)
		}
		attrs := map[string]string{}
		for _, kv := range sp.Attributes() {
			v := kv.Value.String()
			attrs[string(kv.Key)] = v
			if strings.Contains(v, "secret") {
				t.Errorf("span %s carries %s=%q", sp.Name(), kv.Key, v)
			}
		}
		if attrs["elicit.mode"] != "form" || attrs["elicit.tool"] != "order" {
			t.Errorf("span %s: attributes %v", sp.Name(), attrs)
		}
		got[sp.Name()+" "+attrs["elicit.path"]+" "+attrs["elicit.outcome"]]++
	}
	t.Logf("spans: %v", got)
	for _, want := range []string{
		"elicit.request request accepted", "elicit.request request declined",
		"elicit.request input_required input_required",
		"elicit.result request accepted", "elicit.result input_required accepted",
		"elicit.result input_required declined",
	} {
		if got[want] == 0 {
			t.Errorf("no span %q", want)
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	sums := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != scope {
			t.Errorf("metrics of instrumentation scope %q, want %q", sm.Scope.Name, scope)
		}
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					o, _ := p.Attributes.Value("elicit.outcome")
					sums[m.Name+" "+o.String()] += p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					sums[m.Name] += int64(p.Count)
				}
			}
		}
	}
	t.Logf("metrics: %v", sums)
	if sums["elicitvault.elicitations.started "] != 4 || sums["elicitvault.elicitations.pending "] != 0 ||
		sums["elicitvault.elicitations.outcomes accepted"] != 2 || sums["elicitvault.elicitations.outcomes declined"] != 2 ||
		sums["elicitvault.elicitations.outcomes input_required"] != 0 || sums["elicitvault.elicitation.duration"] != 6 {
		t.Errorf("metrics %v", sums)
	}
}

// newShop returns a server with an Elicitor on a memory store, with
// hooks, its MCP endpoint (for elicittest) and the store.
func newShop(t *testing.T, hooks elicit.Hooks) (*mcp.Server, http.Handler, store.Store) {
	t.Helper()
	st := memory.New(nil)
	t.Cleanup(func() { st.Close() })
	ev := fronttest.NewElicitor(t, st, &elicit.Config{Hooks: []elicit.Hooks{hooks}})
	s := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "1"}, nil)
	ev.Install(s)
	return s, ev.Handler(s, nil), st
}

// TestStoreResetMetric: a node that finds the store lost its data counts
// it in elicitvault.store.resets.
func TestStoreResetMetric(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	hooks, err := otelelicit.Hooks(&otelelicit.Options{MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	s, h, st := newShop(t, hooks)
	flush := false
	mcp.AddTool(s, &mcp.Tool{Name: "order"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		o, err := elicit.Form[order](ctx, "Which item?")
		if err != nil {
			if flush { // between the question and its answer
				flush = false
				entries, _, _ := st.Scan(ctx, "", 1000)
				for _, e := range entries {
					st.Delete(ctx, e.Key)
				}
			}
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(o.Action)}}}, nil, nil
	})
	accept := elicittest.Accept(map[string]any{"item": "a"})
	elicittest.CallAt(t, h, "2026-07-28", "order", nil, accept)
	flush = true
	if r := elicittest.CallAt(t, h, "2026-07-28", "order", nil, accept); r.Err == nil {
		t.Fatal("an answer to a question asked before the store lost its data was taken")
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var resets int64 = -1
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if d, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "elicitvault.store.resets" {
				resets = 0
				for _, p := range d.DataPoints {
					resets += p.Value
				}
			}
		}
	}
	if resets != 1 {
		t.Fatalf("elicitvault.store.resets = %d, want 1", resets)
	}
}
