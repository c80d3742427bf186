package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// brokerTimeout bounds connecting to the broker (TCP and AMQP handshake)
// and waiting for a publish to be confirmed.
const brokerTimeout = 5 * time.Second

// broker is one connection and one channel to RabbitMQ.
type broker struct {
	conn       *amqp.Connection
	ch         *amqp.Channel
	connClosed chan *amqp.Error
	chClosed   chan *amqp.Error
}

func dialBroker(rawURL string) (*broker, error) {
	conn, err := amqp.DialConfig(rawURL, amqp.Config{Dial: amqp.DefaultDial(brokerTimeout), Heartbeat: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("cannot connect to RabbitMQ at %s: %w", redactURL(rawURL), err)
	}
	ch, err := conn.Channel()
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("RabbitMQ at %s: open a channel: %w", redactURL(rawURL), err)
	}
	return &broker{
		conn: conn, ch: ch,
		connClosed: conn.NotifyClose(make(chan *amqp.Error, 1)),
		chClosed:   ch.NotifyClose(make(chan *amqp.Error, 1)),
	}, nil
}

// declare makes the durable queue, and the exchange it is bound to when
// one is named. Declaring is idempotent: the publisher and every consumer
// do it.
func (b *broker) declare(exchange, queue string) error {
	if _, err := b.ch.QueueDeclare(queue, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare queue %q: %w", queue, err)
	}
	if exchange == "" {
		return nil
	}
	if err := b.ch.ExchangeDeclare(exchange, amqp.ExchangeDirect, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange %q: %w", exchange, err)
	}
	if err := b.ch.QueueBind(queue, queue, exchange, false, nil); err != nil {
		return fmt.Errorf("bind queue %q to exchange %q: %w", queue, exchange, err)
	}
	return nil
}

// publisher sends persistent messages and waits for the broker's confirm
// of each, so a message it reports sent is on disk in the queue.
type publisher struct {
	b        *broker
	exchange string
	queue    string
}

func (b *broker) publisher(exchange, queue string) (*publisher, error) {
	if err := b.ch.Confirm(false); err != nil {
		return nil, fmt.Errorf("publisher confirms: %w", err)
	}
	return &publisher{b: b, exchange: exchange, queue: queue}, nil
}

// publish sends body under the message id and waits for its confirm.
func (p *publisher) publish(ctx context.Context, id string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, brokerTimeout)
	defer cancel()
	confirm, err := p.b.ch.PublishWithDeferredConfirmWithContext(ctx, p.exchange, p.queue, false, false, amqp.Publishing{
		MessageId:    id,
		AppId:        orderPublisher,
		ContentType:  "application/json",
		DeliveryMode: amqp.Persistent,
		Timestamp:    time.Now(),
		Body:         body,
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

// consume starts delivering the queue to this channel, at most prefetch
// unacked deliveries at a time.
func (b *broker) consume(queue string, prefetch int) (<-chan amqp.Delivery, error) {
	if err := b.ch.Qos(prefetch, 0, false); err != nil {
		return nil, fmt.Errorf("set prefetch: %w", err)
	}
	deliveries, err := b.ch.Consume(queue, "", false, false, false, false, nil)
	if err != nil {
		return nil, fmt.Errorf("consume queue %q: %w", queue, err)
	}
	return deliveries, nil
}

// closed says why deliveries stopped: the connection or the channel
// closed, with the broker's reason when it gave one.
func (b *broker) closed() error {
	for _, c := range []struct {
		what string
		ch   chan *amqp.Error
	}{{"connection", b.connClosed}, {"channel", b.chClosed}} {
		select {
		case e, ok := <-c.ch:
			if ok && e != nil {
				return fmt.Errorf("the broker closed the %s: %w", c.what, e)
			}
			return fmt.Errorf("the broker %s closed", c.what)
		default:
		}
	}
	return errors.New("the broker stopped delivering")
}

// close closes the channel and the connection; deliveries not acked go
// back to the queue.
func (b *broker) close() {
	_ = b.ch.Close()
	_ = b.conn.CloseDeadline(time.Now().Add(brokerTimeout))
}

// dsnPassword finds the password of a key=value DSN.
var dsnPassword = regexp.MustCompile(`(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// redactURL shows a URL or DSN with its password replaced by xxxxx.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err == nil && u.Scheme != "":
		if q := u.Query(); q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	case strings.Contains(raw, "://"):
		return "(an unparsable URL)"
	}
	return dsnPassword.ReplaceAllString(raw, "${1}xxxxx")
}
