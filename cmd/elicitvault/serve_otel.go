package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/elicitvault/elicitvault/elicit"
	"github.com/elicitvault/elicitvault/otelelicit"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

const otelHelp = `Telemetry: serve traces and measures every elicitation (see the otelelicit
package) and exports it with OTLP over HTTP when the standard OpenTelemetry
environment asks for it: traces when OTEL_TRACES_EXPORTER=otlp or an
endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT),
metrics likewise (OTEL_METRICS_EXPORTER, OTEL_EXPORTER_OTLP_METRICS_ENDPOINT).
OTEL_*_EXPORTER=none or OTEL_SDK_DISABLED=true turns either off; the other
OTEL_EXPORTER_OTLP_* variables (headers, timeout, TLS, compression),
OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_BSP_* and
OTEL_METRIC_EXPORT_INTERVAL apply. Only the http/protobuf protocol is
built in. Without these variables nothing is exported or dialed.`

// telemetry is what serve exports, and the hooks that feed it.
type telemetry struct {
	hooks    elicit.Hooks
	shutdown func(context.Context) error
}

// otelWanted reports whether the environment asks for a signal ("traces"
// or "metrics") to be exported, and refuses an exporter or protocol that
// is not built in.
func otelWanted(getenv func(string) string, signal string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	upper := strings.ToUpper(signal)
	exporter := strings.TrimSpace(getenv("OTEL_" + upper + "_EXPORTER"))
	switch exporter {
	case "none":
		return false, nil
	case "":
		// The specification's default is otlp to localhost: serve dials
		// nothing unless told where.
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_"+upper+"_ENDPOINT") == "" {
			return false, nil
		}
	case "otlp":
	default:
		return false, fmt.Errorf("OTEL_%s_EXPORTER=%s: only otlp (or none) is built in", upper, exporter)
	}
	proto := getenv("OTEL_EXPORTER_OTLP_" + upper + "_PROTOCOL")
	if proto == "" {
		proto = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if proto != "" && proto != "http/protobuf" {
		return false, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: only http/protobuf is built in", proto)
	}
	return true, nil
}

// newTelemetry sets up the exporters the environment asks for. With
// neither, it returns nil.
func newTelemetry(ctx context.Context, getenv func(string) string) (*telemetry, error) {
	traces, err := otelWanted(getenv, "traces")
	if err != nil {
		return nil, err
	}
	metrics, err := otelWanted(getenv, "metrics")
	if err != nil {
		return nil, err
	}
	if !traces && !metrics {
		return nil, nil
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override the names.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "elicitvault"), attribute.String("service.version", moduleVersion())),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil && res == nil {
		return nil, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	opts := &otelelicit.Options{}
	var shutdowns []func(context.Context) error
	t := &telemetry{shutdown: func(ctx context.Context) error {
		var err error
		for _, f := range shutdowns {
			err = errors.Join(err, f(ctx))
		}
		return err
	}}
	if traces {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		opts.TracerProvider = tp
		shutdowns = append(shutdowns, tp.Shutdown)
	} else {
		opts.TracerProvider = tracenoop.NewTracerProvider()
	}
	if metrics {
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			t.shutdown(ctx)
			return nil, fmt.Errorf("OTLP metric exporter: %w", err)
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
		opts.MeterProvider = mp
		shutdowns = append(shutdowns, mp.Shutdown)
	} else {
		opts.MeterProvider = metricnoop.NewMeterProvider()
	}
	if t.hooks, err = otelelicit.Hooks(opts); err != nil {
		t.shutdown(ctx)
		return nil, err
	}
	return t, nil
}
