package testenv

import "testing"

// AMQPEnv names the RabbitMQ server (an amqp:// URL) broker tests run
// against.
const AMQPEnv = "IDEM_TEST_AMQP"

// AMQPURL returns the URL of the test RabbitMQ server, or skips the test
// when IDEM_TEST_AMQP is not set.
func AMQPURL(tb testing.TB) string {
	tb.Helper()
	return lookup(tb, AMQPEnv, "a RabbitMQ URL (e.g. amqp://guest:guest@127.0.0.1:5672/)")
}
