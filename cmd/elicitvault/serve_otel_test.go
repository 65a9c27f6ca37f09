package main

import (
	"context"
	"strings"
	"testing"
)

func TestOtelWanted(t *testing.T) {
	for _, c := range []struct {
		env             map[string]string
		traces, metrics bool
		err             string
	}{
		{env: nil},
		{env: map[string]string{"OTEL_SERVICE_NAME": "x"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, traces: true, metrics: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, traces: true},
		{env: map[string]string{"OTEL_METRICS_EXPORTER": "otlp"}, metrics: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_METRICS_EXPORTER": "none"}, traces: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_SDK_DISABLED": "true"}},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, err: "only otlp"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, err: "only http/protobuf"},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://h", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, traces: true, metrics: true},
	} {
		getenv := func(k string) string { return c.env[k] }
		tr, err1 := otelWanted(getenv, "traces")
		me, err2 := otelWanted(getenv, "metrics")
		if c.err != "" {
			if (err1 == nil || !strings.Contains(err1.Error(), c.err)) && (err2 == nil || !strings.Contains(err2.Error(), c.err)) {
				t.Errorf("%v: got %v, %v; want an error with %q", c.env, err1, err2, c.err)
			}
			continue
		}
		if err1 != nil || err2 != nil || tr != c.traces || me != c.metrics {
			t.Errorf("%v: traces %v metrics %v (%v, %v); want %v %v", c.env, tr, me, err1, err2, c.traces, c.metrics)
		}
	}
	// Without OTEL_* there is nothing to set up: no exporter, no hooks.
	tel, err := newTelemetry(context.Background(), func(string) string { return "" })
	if tel != nil || err != nil {
		t.Errorf("newTelemetry without OTEL_*: %v, %v", tel, err)
	}
}
