package pgpool

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigPoolSize(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		dsn      string
		maxConns int32
		want     int32
	}{
		{"default for a URL", "postgres://u@db.example/app?sslmode=disable", 0, DefaultMaxConns},
		{"default for key=value", "host=db.example user=u dbname=app sslmode=disable", 0, DefaultMaxConns},
		{"URL sets it", "postgres://u@db.example/app?sslmode=disable&pool_max_conns=3", 0, 3},
		{"key=value sets it", "host=db.example user=u pool_max_conns=5", 0, 5},
		{"DSN sets the default's value", "postgres://u@db.example/app?pool_max_conns=16", 0, 16},
		{"caller overrides the DSN", "postgres://u@db.example/app?pool_max_conns=3", 7, 7},
		{"caller alone", "postgres://u@db.example/app", 40, 40},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Config(tc.dsn, time.Second, tc.maxConns)
			require.NoError(t, err)
			assert.Equal(t, tc.want, cfg.MaxConns)
			assert.NotContains(t, cfg.ConnConfig.RuntimeParams, dsnMaxConns, "never sent to the server")
		})
	}
}

func TestConfigConnectTimeout(t *testing.T) {
	t.Parallel()
	cfg, err := Config("postgres://u@db.example/app", 3*time.Second, 0)
	require.NoError(t, err)
	assert.Equal(t, 3*time.Second, cfg.ConnConfig.ConnectTimeout, "the default when the DSN sets none")

	cfg, err = Config("postgres://u@db.example/app?connect_timeout=9", 3*time.Second, 0)
	require.NoError(t, err)
	assert.Equal(t, 9*time.Second, cfg.ConnConfig.ConnectTimeout, "the DSN's own wins")
}

func TestConfigRejectsBadInput(t *testing.T) {
	t.Parallel()
	_, err := Config("postgres://u:s3cret@db.example/app?pool_max_conns=zero", time.Second, 0)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "s3cret", "the password is redacted")

	_, err = Config("postgres://u@db.example/app?pool_max_conns=0", time.Second, 0)
	assert.Error(t, err, "a pool of no connections")

	_, err = Config("postgres://u@db.example/app", time.Second, -1)
	assert.ErrorContains(t, err, "negative")
}
