package main

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

func TestProcCPUAddsUserAndSystemTime(t *testing.T) {
	t.Parallel()
	// A command name with a space and a parenthesis, then fields 3 to 17.
	line := "4242 (postgres: a) b) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0\n"
	cpu, err := procCPU(line)
	require.NoError(t, err)
	assert.Equal(t, 3*time.Second, cpu, "(250 + 50) ticks of 10 ms")
	_, err = procCPU("4242 (postgres) S 1 2")
	assert.Error(t, err)
}

func TestWithAppNameSetsTheParameter(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "postgres://u@h:5432/db?application_name=x&sslmode=disable",
		withAppName("postgres://u@h:5432/db?sslmode=disable", "x"))
	assert.Equal(t, "host=h dbname=db application_name=x", withAppName("host=h dbname=db", "x"))
}

// The meter charges a contender the CPU its own backends spend, and not
// another connection's.
func TestBackendMeterReadsTheContendersBackends(t *testing.T) {
	t.Parallel()
	dsn := testenv.DirectDSN(testenv.PostgresDSN(t))
	ctx := t.Context()
	busy, err := pgx.Connect(ctx, withAppName(dsn, "serverbench-test-busy"))
	require.NoError(t, err)
	defer busy.Close(ctx)
	idle, err := pgx.Connect(ctx, withAppName(dsn, "serverbench-test-idle"))
	require.NoError(t, err)
	defer idle.Close(ctx)
	monitor, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer monitor.Close(ctx)
	busyMeter := &backendMeter{conn: monitor, appName: "serverbench-test-busy"}
	idleMeter := &backendMeter{conn: monitor, appName: "serverbench-test-idle"}
	b0, err := busyMeter.sample(ctx)
	if err != nil {
		t.Skipf("the database's backends cannot be read from this host: %v", err)
	}
	require.Len(t, b0, 1)
	i0, err := idleMeter.sample(ctx)
	require.NoError(t, err)
	var n int64
	require.NoError(t, busy.QueryRow(ctx, `SELECT count(*) FROM generate_series(1, 3000000)`).Scan(&n))
	b1, err := busyMeter.sample(ctx)
	require.NoError(t, err)
	i1, err := idleMeter.sample(ctx)
	require.NoError(t, err)
	assert.Positive(t, used(b0, b1), "counting three million rows takes CPU")
	assert.Less(t, used(i0, i1), used(b0, b1), "the idle connection's backend did not count them")
}
