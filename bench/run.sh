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

echo "== client overhead, the two calls alternated one by one in one loop (ratio idem/net-http per run)"
interleaved -test.bench '^BenchmarkCallPaired$' -test.benchtime 2000x | tee "$OUT/callpaired.txt"

echo "== the floors: the least a client keeping the promise does (tight; and through keystore.Memory), alternated with a plain POST and with idem (ratios per run)"
interleaved -test.bench '^BenchmarkCallFloor$' -test.benchtime 4000x | tee "$OUT/callfloor.txt"

echo "== the client's own CPU per call: no network, no server, every cache warm"
interleaved -test.bench '^BenchmarkClientCPU(Tight)?$' -test.benchtime 20000x | tee "$OUT/callcpu.txt"
$BENCHSTAT -col /client "$OUT/callcpu.txt" | tee "$OUT/callcpu.stat"

echo "== the same four ops alternated one by one in one loop, no network (ratios per run)"
interleaved -test.bench '^BenchmarkClientCPUFloor$' -test.benchtime 20000x | tee "$OUT/callcpufloor.txt"

echo "== durable call on bbolt: the settle deferred into the next group commit (1 fsync) vs synced on its own (2)"
interleaved -test.bench '^BenchmarkCallDurable$' -test.benchtime 1000x | tee "$OUT/durable.txt"
$BENCHSTAT -col /settle "$OUT/durable.txt" | tee "$OUT/durable.stat"

echo "== durable call on bbolt vs its floor: one raw bbolt Update plus one net/http POST"
interleaved -test.bench '^BenchmarkCallDurableFloor$' -test.benchtime 1000x | tee "$OUT/durablefloor.txt"
$BENCHSTAT -col /op "$OUT/durablefloor.txt" | tee "$OUT/durablefloor.stat"

echo "== the same two ops alternated one by one in one loop (idem/raw per run)"
interleaved -test.bench '^BenchmarkCallDurableFloorPaired$' -test.benchtime 1000x | tee "$OUT/durablefloorpaired.txt"

echo "== keystore: lone Begin on bbolt vs one raw bbolt Update"
interleaved -test.bench '^BenchmarkBeginFloor$' -test.benchtime 1000x | tee "$OUT/floor.txt"
$BENCHSTAT -col /op "$OUT/floor.txt" | tee "$OUT/floor.stat"

echo "== keystore: Begin throughput by concurrent callers"
interleaved -test.bench '^BenchmarkBeginConcurrent$' -test.benchtime 1s | tee "$OUT/concurrent.txt"
$BENCHSTAT -col /callers "$OUT/concurrent.txt" | tee "$OUT/concurrent.stat"

echo "== keystore: 64 concurrent Begins over 1, in alternating 200 ms phases on one client (x64/1)"
interleaved -test.bench '^BenchmarkBeginScaling$' -test.benchtime 10x | tee "$OUT/scaling.txt"

echo "== keystore: how long each Begin waits, 64 callers, across six folds of the log"
interleaved -test.bench '^BenchmarkBeginLatency$' -test.benchtime 400000x | tee "$OUT/latency.txt"

echo "== telemetry: what OpenTelemetry providers add per Begin + Do (allocations are the figure)"
interleaved -test.bench '^BenchmarkTelemetryCall$' -test.benchtime 2000x | tee "$OUT/telemetry.txt"

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
# One benchserver process per contender (plain net/http, unprotected and
# protected on memory; unprotected and protected on Postgres and Redis
# when a URL is given: IDEM_BENCH_POSTGRES / IDEM_BENCH_REDIS, else
# IDEM_TEST_POSTGRES / IDEM_TEST_REDIS), driven in interleaved rounds by
# serverbench, which drops its schema and keys at the end.
go build -o "$OUT/benchserver" ./bench/cmd/benchserver
go build -o "$OUT/serverbench" ./bench/cmd/serverbench
"$OUT/serverbench" -benchserver "$OUT/benchserver" -rounds 5 -duration 3s | tee "$OUT/server.md"

echo "== server layer in process: plain, unprotected and protected handlers (cpu-µs/op)"
go test -c -o "$OUT/handlers.test" ./bench/cmd/benchserver
for _ in $(seq "$COUNT"); do
	"$OUT/handlers.test" -test.run '^$' -test.bench '^BenchmarkHandlers$' -test.benchtime 200000x -test.benchmem
done | tee "$OUT/handlers.txt"

echo "== memory store sweep at 1M records: lock holds a request can wait for"
go test -c -o "$OUT/server.test" ./server/
"$OUT/server.test" -test.run '^$' -test.bench '^(BenchmarkSweepLockHold|BenchmarkSweepStall)$' -test.benchtime 20x | tee "$OUT/sweep.txt"

echo "== binary size of a Transport-only program: idem against go-retryablehttp"
for p in sizeidem sizeretryablehttp; do
	go build -trimpath -ldflags='-s -w' -o "$OUT/$p" "./bench/cmd/$p"
	go build -o "$OUT/$p.plain" "./bench/cmd/$p"
done
wc -c "$OUT/sizeidem" "$OUT/sizeretryablehttp" "$OUT/sizeidem.plain" "$OUT/sizeretryablehttp.plain" | tee "$OUT/size.txt"
