package fiberapp

import (
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Prefixed puts prefix before every key of st, so that a shared Redis
// keeps one run's records apart (gofiber/storage/redis has no prefix of
// its own) and they can be dropped after it.
func Prefixed(st fiber.Storage, prefix string) fiber.Storage {
	return prefixed{st, prefix}
}

type prefixed struct {
	fiber.Storage
	prefix string
}

func (p prefixed) Get(key string) ([]byte, error) { return p.Storage.Get(p.prefix + key) }
func (p prefixed) Set(key string, val []byte, exp time.Duration) error {
	return p.Storage.Set(p.prefix+key, val, exp)
}
func (p prefixed) Delete(key string) error { return p.Storage.Delete(p.prefix + key) }

// Reset would empty the whole database (FLUSHDB on Redis), other users'
// keys included, so a prefixed storage refuses it.
func (p prefixed) Reset() error { return errPrefixedReset }

var errPrefixedReset = errors.New("fiberapp: Reset of a prefixed storage would remove keys outside the prefix")
