#!/usr/bin/env bash
# Reproduces every table of BENCHMARKS.md from a clean clone. It takes
# several minutes and is not part of CI. Results land in $OUT (default
# bench/results); the tables are printed as they are produced.
#
#   bench/run.sh            # everything
#   COUNT=10 bench/run.sh   # more runs per benchmark
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-bench/results}
COUNT=${COUNT:-6}
BENCHSTAT="go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da"
mkdir -p "$OUT"

echo "== machine"
{
	echo "nproc: $(nproc)"
	lscpu | head -n 15
	df -h /work 2>/dev/null || df -h .
	go version
	uptime
} | tee "$OUT/machine.txt"

# go test -count N runs each sub-benchmark N times in a row; running the
# compiled benchmark COUNT times with -test.count 1 makes the contenders of
# one function alternate instead, so machine drift hits them alike.
go test -c -o "$OUT/bench.test" ./bench/
interleaved() {
	for _ in $(seq "$COUNT"); do
		"$OUT/bench.test" -test.run '^$' -test.benchmem "$@"
	done
}

echo "== client overhead (one op = Begin + Do of a new intent; baselines: one POST with a fresh key)"
interleaved -test.bench '^BenchmarkCall$' -test.benchtime 3000x | tee "$OUT/call.txt"
$BENCHSTAT -col /client "$OUT/call.txt" | tee "$OUT/call.stat"

echo "== durable call on bbolt: the settle deferred into the next group commit (1 fsync) vs synced on its own (2)"
interleaved -test.bench '^BenchmarkCallDurable$' -test.benchtime 1000x | tee "$OUT/durable.txt"
$BENCHSTAT -col /settle "$OUT/durable.txt" | tee "$OUT/durable.stat"

echo "== keystore: lone Begin on bbolt vs one raw bbolt Update"
interleaved -test.bench '^BenchmarkBeginFloor$' -test.benchtime 1000x | tee "$OUT/floor.txt"
$BENCHSTAT -col /op "$OUT/floor.txt" | tee "$OUT/floor.stat"

echo "== keystore: Begin throughput by concurrent callers"
interleaved -test.bench '^BenchmarkBeginConcurrent$' -test.benchtime 1s | tee "$OUT/concurrent.txt"
$BENCHSTAT -col /callers "$OUT/concurrent.txt" | tee "$OUT/concurrent.stat"

echo "== keystore: 64 concurrent Begins over 1, in alternating 200 ms phases on one client (x64/1)"
interleaved -test.bench '^BenchmarkBeginScaling$' -test.benchtime 10x | tee "$OUT/scaling.txt"

echo "== keystore: raw bbolt commits of 1 and 64 records (the ceiling of group commit)"
interleaved -test.bench '^BenchmarkBoltBatch$' -test.benchtime 1s | tee "$OUT/batch.txt"
$BENCHSTAT -col /batch "$OUT/batch.txt" | tee "$OUT/batch.stat"

echo "== herd (virtual clock)"
go run ./bench/cmd/herd -seeds 9 | tee "$OUT/herd.md"

echo "== outage (real loopback HTTP)"
go run ./bench/cmd/outage -runs 3 | tee "$OUT/outage.md"

echo "== storm and outage through ONE shared client (real loopback HTTP, server in its own process)"
# The shedding server is the storm binary itself, started as a child
# process (-serve); strategies alternate within each of the rounds.
go build -o "$OUT/storm" ./bench/cmd/storm
"$OUT/storm" -n 200 -slots 8 -service 25ms -rounds 5 | tee "$OUT/storm.md"
"$OUT/storm" -n 200 -slots 8 -service 10ms -rounds 5 -outage 0 | tee "$OUT/storm-10ms.md"

echo "== server throughput (load generator in its own process)"
# The protected and the unprotected handler run once per store: memory
# always, Postgres and Redis when a URL is given (IDEM_BENCH_POSTGRES /
# IDEM_BENCH_REDIS, else IDEM_TEST_POSTGRES / IDEM_TEST_REDIS). The
# Postgres stores size their pool for 16 concurrent requests by default
# (internal/pgpool), one per load connection.
PG=${IDEM_BENCH_POSTGRES:-${IDEM_TEST_POSTGRES:-}}
REDIS=${IDEM_BENCH_REDIS:-${IDEM_TEST_REDIS:-}}
go build -o "$OUT/benchserver" ./bench/cmd/benchserver
go build -o "$OUT/load" ./bench/cmd/load
serve_args=(-unprotected 127.0.0.1:18081 -protected 127.0.0.1:18080)
load_args=(-unprotected memory=http://127.0.0.1:18081 -protected memory=http://127.0.0.1:18080)
if [ -n "$PG" ]; then
	serve_args+=(-unprotected "127.0.0.1:18085,$PG" -protected "127.0.0.1:18082,$PG")
	load_args+=(-unprotected "postgres=http://127.0.0.1:18085" -protected "postgres=http://127.0.0.1:18082")
fi
if [ -n "$REDIS" ]; then
	serve_args+=(-unprotected "127.0.0.1:18087,$REDIS" -protected "127.0.0.1:18084,$REDIS")
	load_args+=(-unprotected "redis=http://127.0.0.1:18087" -protected "redis=http://127.0.0.1:18084")
fi
"$OUT/benchserver" "${serve_args[@]}" > "$OUT/benchserver.log" &
server=$!
# The shared stores keep the benchmark's data in their own schema and key
# prefix (see bench/cmd/benchserver); drop both when the run ends, so the
# databases are left as they were found.
cleanup() {
	kill "$server" 2>/dev/null || true
	wait "$server" 2>/dev/null || true
	if [ -n "$PG" ] && command -v psql >/dev/null; then
		psql "$PG" -qc 'DROP SCHEMA IF EXISTS idem_bench CASCADE' >/dev/null 2>&1 || true
	fi
	if [ -n "$REDIS" ] && command -v redis-cli >/dev/null; then
		redis-cli -u "$REDIS" --scan --pattern 'idem-bench:*' | xargs -r -n 1000 redis-cli -u "$REDIS" del >/dev/null || true
	fi
}
trap cleanup EXIT
# benchserver opens every store, then listens on every port at once.
for _ in $(seq 150); do
	if (exec 3<>/dev/tcp/127.0.0.1/18080) 2>/dev/null; then break; fi
	sleep 0.1
done
"$OUT/load" "${load_args[@]}" -conns 16 -rounds 5 -duration 3s | tee "$OUT/server.md"
