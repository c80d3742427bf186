package keystore_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idemkit/idem/keystore"
)

func TestZZHunt(t *testing.T) {
	if os.Getenv("ZZHUNT") == "" {
		t.Skip()
	}
	valid := validKeystoreBytes(t)
	rng := rand.New(rand.NewPCG(7, 9))
	dir := t.TempDir()
	for iter := 0; iter < 3000; iter++ {
		data := append([]byte(nil), valid...)
		n := 1 + rng.IntN(8)
		for j := 0; j < n; j++ {
			i := 8192 + rng.IntN(len(data)-8192)
			data[i] = byte(rng.Uint32())
		}
		path := filepath.Join(dir, "k.db")
		os.Remove(path)
		os.WriteFile(path, data, 0o600)
		done := make(chan struct{})
		go func() {
			defer close(done)
			s, err := keystore.OpenBolt(path, &keystore.BoltOptions{Timeout: 100 * time.Millisecond, NoSync: true})
			if err != nil {
				return
			}
			defer s.Close()
			ctx := context.Background()
			s.List(ctx, keystore.Filter{})
			s.Get(ctx, "k1")
			s.GetByName(ctx, "name-k2")
			s.Create(ctx, pendingRecord("fresh", "name-k3"))
			s.Update(ctx, pendingRecord("k1", "name-k1"))
			s.Purge(ctx, time.Now().Add(time.Hour))
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			os.WriteFile("/tmp/hang.db", data, 0o600)
			t.Fatalf("hang at iter %d", iter)
		}
	}
}
