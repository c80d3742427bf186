package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
)

// orderPublisher is the AppId the publisher stamps on its messages. The
// message ids are its own, so it is the principal they are scoped by.
const orderPublisher = "orders-example"

// maxMessageID is the longest message id taken: an AMQP short string.
const maxMessageID = 255

// consumer handles the deliveries of one channel, one at a time.
type consumer struct {
	cfg       config
	broker    *broker
	store     *pgstore.Store
	shipments *shipments
	out       io.Writer
	tally     tally
}

// tally counts what the consumer did, for its last line.
type tally struct{ shipped, duplicates, requeued, rejected int }

func (c *consumer) run(ctx context.Context) error {
	deliveries, err := c.broker.consume(c.cfg.queue, c.cfg.prefetch)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.out, "consuming %s\n", c.cfg.queue)
	var idle <-chan time.Time
	var idleTimer *time.Timer
	if c.cfg.idle > 0 {
		idleTimer = time.NewTimer(c.cfg.idle)
		defer idleTimer.Stop()
		idle = idleTimer.C
	}
	for {
		select {
		case <-ctx.Done():
			return c.finish(ctx, "interrupted")
		case <-idle:
			return c.finish(ctx, fmt.Sprintf("no message for %s", c.cfg.idle))
		case d, ok := <-deliveries:
			if !ok {
				return c.broker.closed()
			}
			c.handle(ctx, d)
			if idleTimer != nil {
				idleTimer.Reset(c.cfg.idle)
			}
		}
	}
}

// finish prints the tally and the number of shipments on record.
func (c *consumer) finish(ctx context.Context, why string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.storeTimeout)
	defer cancel()
	n, err := c.shipments.count(ctx)
	if err != nil {
		return fmt.Errorf("count the shipments: %w", err)
	}
	t := c.tally
	fmt.Fprintf(c.out, "%s: %d shipped, %d duplicates, %d requeued, %d rejected; %d shipments on record\n",
		why, t.shipped, t.duplicates, t.requeued, t.rejected, n)
	return nil
}

// handle settles one delivery: ack once its shipment and completion are
// committed (now or by an earlier delivery), requeue on a failure a
// redelivery may not meet, reject what no redelivery can fix.
func (c *consumer) handle(ctx context.Context, d amqp.Delivery) {
	id := d.MessageId
	c.step("received %s (redelivered: %t)", id, d.Redelivered)
	if err := checkMessageID(id); err != nil {
		c.reject(d, err)
		return
	}
	o, err := parseOrder(d.Body)
	if err != nil {
		c.reject(d, err)
		return
	}
	scope := server.Scope{Principal: d.AppId, Method: "CONSUME", Route: c.cfg.queue}
	fingerprint := server.Fingerprint(scope.Method, scope.Route, d.Body)
	ran := false
	result, err := server.Once(ctx, c.store, scope, id, fingerprint, func(ctx context.Context) ([]byte, error) {
		// Past the lease the id may be another consumer's: the
		// transaction would be fenced anyway.
		ctx, cancel := context.WithTimeout(ctx, c.cfg.lease)
		defer cancel()
		c.step("shipping %s", id)
		result, err := c.shipments.ship(ctx, id, o, c.cfg.effectDelay)
		ran = err == nil
		return result, err
	}, server.WithLease(c.cfg.lease), server.WithStoreTimeout(c.cfg.storeTimeout))
	switch {
	case errors.Is(err, server.ErrKeyReused):
		c.reject(d, err)
		return
	case err != nil:
		// The store is unreachable or stalled, another consumer holds
		// the id (ErrInProgress), or the shipment failed and its id was
		// released: nothing of this delivery is committed, or what is
		// will be recognised on the next delivery.
		c.requeue(ctx, d, err)
		return
	}
	var r shipmentResult
	_ = json.Unmarshal(result, &r)
	if ran {
		c.tally.shipped++
		fmt.Fprintf(c.out, "shipped %s: shipment %d\n", id, r.Shipment)
		if c.cfg.nackAfterCommit != nil && c.cfg.nackAfterCommit(id) {
			c.requeue(ctx, d, errors.New("a transient failure after the commit"))
			return
		}
	} else {
		c.tally.duplicates++
		fmt.Fprintf(c.out, "duplicate %s: shipment %d made already\n", id, r.Shipment)
	}
	_ = sleep(ctx, c.cfg.ackDelay)
	if err := d.Ack(false); err != nil {
		// The broker will redeliver it, and the redelivery is a
		// duplicate: nothing is lost or done twice.
		fmt.Fprintf(c.out, "ack %s failed: %v\n", id, err)
		return
	}
	c.step("acked %s", id)
}

// step prints one step of handling a delivery, with -v.
func (c *consumer) step(format string, args ...any) {
	if c.cfg.verbose {
		fmt.Fprintf(c.out, format+"\n", args...)
	}
}

// requeue hands the delivery back for another try, after a pause so a
// failing store or a held id is not hammered.
func (c *consumer) requeue(ctx context.Context, d amqp.Delivery, why error) {
	c.tally.requeued++
	fmt.Fprintf(c.out, "requeued %s: %s\n", d.MessageId, oneLine(why))
	_ = sleep(ctx, c.cfg.retryDelay)
	_ = d.Nack(false, true)
}

// reject drops a delivery no redelivery can fix (a queue with a
// dead-letter exchange keeps it there).
func (c *consumer) reject(d amqp.Delivery, why error) {
	c.tally.rejected++
	fmt.Fprintf(c.out, "rejected %q: %s\n", d.MessageId, oneLine(why))
	_ = d.Reject(false)
}

// checkMessageID refuses an id the store cannot key by.
func checkMessageID(id string) error {
	switch {
	case id == "":
		return errors.New("no message id: redeliveries could not be recognised")
	case len(id) > maxMessageID || !utf8.ValidString(id):
		return fmt.Errorf("the message id must be UTF-8 of at most %d bytes", maxMessageID)
	}
	return nil
}

// publishOrders publishes orders 1..cfg.publish, each cfg.copies times
// (all first copies, then all second copies, and so on).
func publishOrders(ctx context.Context, b *broker, cfg config, out io.Writer) error {
	p, err := b.publisher(cfg.exchange, cfg.queue)
	if err != nil {
		return err
	}
	for round := range cfg.copies {
		for i := 1; i <= cfg.publish; i++ {
			id := fmt.Sprintf("%s%d", cfg.idPrefix, i)
			body, err := json.Marshal(order{OrderID: id, SKU: "book", Quantity: i})
			if err != nil {
				return err
			}
			if err := p.publish(ctx, id, body); err != nil {
				return err
			}
			if round == 0 {
				fmt.Fprintf(out, "published %s\n", id)
			} else {
				fmt.Fprintf(out, "published %s again\n", id)
			}
		}
	}
	return nil
}
