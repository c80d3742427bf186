package main

import (
	"context"
	"fmt"
	"net/url"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// brokerTimeout bounds connecting to RabbitMQ and waiting for a publish
// to be confirmed.
const brokerTimeout = 5 * time.Second

// relayAppID stamps the messages the outbox relay publishes; the consumer
// scopes message ids by it.
const relayAppID = "orders-outbox"

// broker is one connection and one channel to RabbitMQ, with publisher
// confirms on.
type broker struct {
	conn *amqp.Connection
	ch   *amqp.Channel
}

// dialBroker connects and declares the durable queue.
func dialBroker(rawURL, queue string) (*broker, error) {
	conn, err := amqp.DialConfig(rawURL, amqp.Config{Dial: amqp.DefaultDial(brokerTimeout), Heartbeat: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("cannot connect to RabbitMQ at %s: %w", redactURL(rawURL), err)
	}
	ch, err := conn.Channel()
	if err == nil {
		_, err = ch.QueueDeclare(queue, true, false, false, false, nil)
	}
	if err == nil {
		err = ch.Confirm(false)
	}
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("RabbitMQ at %s: queue %q: %w", redactURL(rawURL), queue, err)
	}
	return &broker{conn: conn, ch: ch}, nil
}

// publish sends body as a persistent message under id and waits for the
// broker's confirm: a message reported sent is in the queue.
func (b *broker) publish(ctx context.Context, queue, id string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, brokerTimeout)
	defer cancel()
	confirm, err := b.ch.PublishWithDeferredConfirmWithContext(ctx, "", queue, false, false, amqp.Publishing{
		MessageId: id, AppId: relayAppID, ContentType: "application/json",
		DeliveryMode: amqp.Persistent, Timestamp: time.Now(), Body: body,
	})
	if err != nil {
		return fmt.Errorf("publish %s: %w", id, err)
	}
	acked, err := confirm.WaitContext(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("publish %s: no confirm from the broker: %w", id, err)
	case !acked:
		return fmt.Errorf("publish %s: the broker refused the message", id)
	}
	return nil
}

// consume delivers the queue, a few unacked messages at a time.
func (b *broker) consume(queue string) (<-chan amqp.Delivery, error) {
	if err := b.ch.Qos(4, 0, false); err != nil {
		return nil, fmt.Errorf("set prefetch: %w", err)
	}
	return b.ch.Consume(queue, "", false, false, false, false, nil)
}

func (b *broker) close() {
	_ = b.ch.Close()
	_ = b.conn.CloseDeadline(time.Now().Add(brokerTimeout))
}

// redactURL shows a URL with its password hidden.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unparsable URL)"
	}
	return u.Redacted()
}
