package redisstore

import "github.com/idemkit/idem/server/redisstore"

// keys names the payments API's Redis keys, under the records' prefix.
type keys struct{ prefix string }

// payment is the hash holding one payment of principal.
func (k keys) payment(principal, id string) string {
	return k.prefix + "pay:" + redisstore.Digest(principal) + ":" + id
}

// payments is the sorted set listing principal's payments.
func (k keys) payments(principal string) string {
	return k.prefix + "pays:" + redisstore.Digest(principal)
}

// paymentCount counts the payments of every principal; its value also
// orders payments created at the same instant.
func (k keys) paymentCount() string {
	return k.prefix + "paycount"
}

// operation is the hash holding one operation of principal.
func (k keys) operation(principal, id string) string {
	return k.prefix + "op:" + redisstore.Digest(principal) + ":" + id
}
