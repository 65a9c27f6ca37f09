package integration

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP receiver: it decodes the protobuf export
// requests of the OpenTelemetry exporters and keeps their spans.
type collector struct {
	mu      sync.Mutex
	spans   []collected
	metrics int // export requests of metrics
}

type collected struct {
	service        string
	name           string
	trace, id, par string
	attrs          []*commonpb.KeyValue
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "bad export request", http.StatusBadRequest)
		return
	}
	var req, resp proto.Message
	switch r.URL.Path {
	case "/v1/traces":
		req, resp = &coltracepb.ExportTraceServiceRequest{}, &coltracepb.ExportTraceServiceResponse{}
	case "/v1/metrics":
		req, resp = &colmetricpb.ExportMetricsServiceRequest{}, &colmetricpb.ExportMetricsServiceResponse{}
	default:
		http.NotFound(w, r)
		return
	}
	if err := proto.Unmarshal(b, req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	if traces, ok := req.(*coltracepb.ExportTraceServiceRequest); ok {
		c.addSpans(traces)
	} else {
		c.metrics++
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// addSpans keeps the spans of req; c.mu is held.
func (c *collector) addSpans(req *coltracepb.ExportTraceServiceRequest) {
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.spans = append(c.spans, collected{
					service: service, name: s.Name,
					trace: hex.EncodeToString(s.TraceId), id: hex.EncodeToString(s.SpanId), par: hex.EncodeToString(s.ParentSpanId),
					attrs: s.Attributes,
				})
			}
		}
	}
}

func (c *collector) collected() ([]collected, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]collected(nil), c.spans...), c.metrics
}

// stop stops a serve process with SIGTERM and waits for it to exit (its
// telemetry flushed).
func (p *serveProc) stop(t *testing.T) {
	t.Helper()
	if _, inTime := p.Stop(15 * time.Second); !inTime {
		t.Fatalf("elicitvault serve did not stop within 15s of SIGTERM:\n%s", p.log())
	}
}

// TestServeTraceAcrossNodes runs two `elicitvault serve` nodes, A and B,
// on one Redis store, both exporting OTLP/HTTP (from the OTEL_*
// environment) to a collector in the test. A URL-mode elicitation asked on
// A is completed through B's consent page, on both protocol paths: B's
// elicit.complete span belongs to the trace of A's elicit.request span,
// whose trace context traveled sealed in the pending record. No span
// attribute holds the session ID, the message, the link or its token.
func TestServeTraceAcrossNodes(t *testing.T) { serveTraceAcrossNodes(t) }

// TestServeSDKMCPGoTraceAcrossNodes: the same with A on mcp-go and B on
// the go-sdk: the hooks, and the otelelicit module on them, are the engine's.
func TestServeSDKMCPGoTraceAcrossNodes(t *testing.T) { serveTraceAcrossNodes(t, "--sdk", "mcp-go") }

func serveTraceAcrossNodes(t *testing.T, aArgs ...string) {
	storeURL := redisStoreURL(t, "evotel")

	col := &collector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	env := func(name string) []string {
		return []string{
			"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL,
			"OTEL_SERVICE_NAME=" + name,
			"OTEL_BSP_SCHEDULE_DELAY=100",
			"OTEL_METRIC_EXPORT_INTERVAL=200",
		}
	}
	a := startServe(t, env("node-a"), append([]string{"--store", storeURL}, aArgs...)...)
	b := startServe(t, env("node-b"), "--store", storeURL)

	// What no attribute may hold, per protocol path.
	secrets := map[string][]string{}
	for _, v := range goVersions {
		t.Run(v.name, func(t *testing.T) {
			cs, el := urlAcrossNodes(t, a, b, v.version)
			lu, _ := url.Parse(el.URL)
			secrets[v.name] = []string{cs.ID(), el.Message, el.URL, lu.RawQuery}
			for _, tv := range lu.Query() {
				secrets[v.name] = append(secrets[v.name], tv...)
			}
		})
	}
	if t.Failed() {
		t.FailNow()
	}
	a.stop(t)
	b.stop(t)

	spans, metrics := col.collected()
	byID := map[string]collected{}
	for _, s := range spans {
		byID[s.trace+"/"+s.id] = s
	}
	var completes []collected
	for _, s := range spans {
		if s.service == "node-b" && s.name == "elicit.complete" {
			completes = append(completes, s)
		}
	}
	if len(completes) != len(goVersions) {
		t.Fatalf("B exported %d elicit.complete spans, want %d (one per protocol path); spans: %v", len(completes), len(goVersions), spans)
	}
	traces := map[string]bool{}
	for _, s := range completes {
		// B's span's parent chain reaches A's elicit.request span.
		chain := []string{"B:" + s.name}
		p, ok := byID[s.trace+"/"+s.par]
		for ok && !(p.service == "node-a" && p.name == "elicit.request") {
			chain = append(chain, p.service+":"+p.name)
			p, ok = byID[p.trace+"/"+p.par]
		}
		if !ok {
			t.Errorf("B's elicit.complete span (trace %s, parent %s) does not connect to a span of A: chain %v", s.trace, s.par, chain)
			continue
		}
		traces[s.trace] = true
		t.Logf("trace %s: node-b elicit.complete -> node-a elicit.request %s", s.trace, p.id)
		var inTrace []string
		for _, x := range spans {
			if x.trace == s.trace {
				inTrace = append(inTrace, x.service+":"+x.name)
			}
		}
		t.Logf("  spans of the trace: %v", inTrace)
	}
	// On 2026-07-28 the call's next round, which awaits the page's answer
	// (on A here: the client retries where it called), resumes from the
	// pending record too: its elicit.complete joins the asking round's
	// trace.
	rounds := 0
	for _, s := range spans {
		if s.service != "node-a" || s.name != "elicit.complete" {
			continue
		}
		rounds++
		if p, ok := byID[s.trace+"/"+s.par]; !ok || p.service != "node-a" || p.name != "elicit.request" || !traces[s.trace] {
			t.Errorf("A's elicit.complete (trace %s) is not the child of the asking round's elicit.request", s.trace)
		}
	}
	if rounds != 1 {
		t.Errorf("A exported %d elicit.complete spans, want 1 (the 2026-07-28 round that awaits the answer)", rounds)
	}
	if len(traces) != len(goVersions) {
		t.Errorf("the elicitations' spans connect in %d traces, want %d", len(traces), len(goVersions))
	}
	if metrics == 0 {
		t.Errorf("no metrics were exported")
	}

	var all []string
	for _, s := range secrets {
		all = append(all, s...)
	}
	for _, s := range spans {
		for _, kv := range s.attrs {
			val := fmt.Sprint(kv.GetValue())
			for _, bad := range all {
				if bad != "" && (strings.Contains(val, bad) || strings.Contains(kv.Key, bad)) {
					t.Errorf("span %s of %s: attribute %s holds a session ID, message, link or token", s.name, s.service, kv.Key)
				}
			}
		}
		if bytes.Contains([]byte(s.name), []byte("consent")) {
			t.Errorf("span name %q", s.name)
		}
	}
	t.Logf("%d spans (%d of B's elicit.complete), %d metric exports", len(spans), len(completes), metrics)
}
