package redisstore

import "github.com/idemkit/idem/server/redisstore"

// keys names the payments API's Redis keys, each in the key group of its
// principal (redisstore.Store.KeyGroup), the group of the records of that
// principal: a script writing a payment and completing its key touches
// one Redis Cluster slot.
type keys struct{ records *redisstore.Store }

// payment is the hash holding one payment of principal.
func (k keys) payment(principal, id string) string {
	return k.records.KeyGroup(principal) + "pay:" + redisstore.Digest(principal) + ":" + id
}

// payments is the sorted set listing principal's payments.
func (k keys) payments(principal string) string {
	return k.records.KeyGroup(principal) + "pays:" + redisstore.Digest(principal)
}

// paymentCount counts the payments of principal's key group (CountPayments
// adds the groups up); its value also orders payments created at the same
// instant, which only matters within one principal's list.
func (k keys) paymentCount(principal string) string {
	return k.records.KeyGroup(principal) + "paycount"
}

// paymentCounts are the payment counters of every key group.
func (k keys) paymentCounts() []string {
	groups := k.records.AllKeyGroups()
	out := make([]string, len(groups))
	for i, g := range groups {
		out[i] = g + "paycount"
	}
	return out
}

// operation is the hash holding one operation of principal.
func (k keys) operation(principal, id string) string {
	return k.records.KeyGroup(principal) + "op:" + redisstore.Digest(principal) + ":" + id
}
