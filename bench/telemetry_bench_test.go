package bench

import (
	"context"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/idemkit/idem"
)

// BenchmarkTelemetryCall is BenchmarkCall's memory-keystore call with
// OpenTelemetry: none (the Client's default), the API's no-op providers,
// and the SDK's providers (spans sampled and dropped, metrics aggregated
// for a reader that is never collected), beside the plain POST. What
// tracing and metrics cost is the difference with telemetry=none.
func BenchmarkTelemetryCall(b *testing.B) {
	srv := newPaymentServer(b)
	url := srv.URL + "/v1/payments"
	hc := srv.Client()

	b.Run("client=net-http", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			postWithKey(b, hc, url)
		}
	})
	b.Run("telemetry=none", func(b *testing.B) { runIdemCalls(b, hc, url) })
	b.Run("telemetry=noop", func(b *testing.B) {
		runIdemCalls(b, hc, url, idem.WithTracerProvider(tracenoop.NewTracerProvider()), idem.WithMeterProvider(metricnoop.NewMeterProvider()))
	})
	b.Run("telemetry=sdk", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider()
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() {
			_ = tp.Shutdown(context.Background())
			_ = mp.Shutdown(context.Background())
		})
		runIdemCalls(b, hc, url, idem.WithTracerProvider(tp), idem.WithMeterProvider(mp))
	})
}
