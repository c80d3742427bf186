// Package testenv gives tests the outside services they run against: the
// PostgreSQL, Redis and RabbitMQ servers named by IDEM_TEST_POSTGRES,
// IDEM_TEST_REDIS and IDEM_TEST_AMQP (a test skips, saying which variable
// to set, when its service is not configured), a schema or key prefix of
// its own per test, an address nothing listens on, a TCP proxy a test
// cuts to make a server vanish under a client, a child process killed at
// a random moment, and the go command.
package testenv
