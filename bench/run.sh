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

echo "== client overhead (one op = Begin + Do of a new intent; baselines: one POST with a fresh key)"
go test -run '^$' -bench '^BenchmarkCall$' -benchtime 3000x -count "$COUNT" ./bench/ | tee "$OUT/call.txt"
$BENCHSTAT -col /client "$OUT/call.txt" | tee "$OUT/call.stat"

echo "== keystore: lone Begin on bbolt vs one raw bbolt Update"
go test -run '^$' -bench '^BenchmarkBeginFloor$' -benchtime 500x -count "$COUNT" ./bench/ | tee "$OUT/floor.txt"
$BENCHSTAT -col /op "$OUT/floor.txt" | tee "$OUT/floor.stat"

echo "== keystore: Begin throughput by concurrent callers"
go test -run '^$' -bench '^BenchmarkBeginConcurrent$' -benchtime 2s -count "$COUNT" ./bench/ | tee "$OUT/concurrent.txt"
$BENCHSTAT -col /callers "$OUT/concurrent.txt" | tee "$OUT/concurrent.stat"

echo "== herd (virtual clock)"
go run ./bench/cmd/herd -seeds 9 | tee "$OUT/herd.md"

echo "== outage (real loopback HTTP)"
go run ./bench/cmd/outage -runs 3 | tee "$OUT/outage.md"

echo "== server throughput (load generator in its own process)"
go build -o "$OUT/benchserver" ./bench/cmd/benchserver
go build -o "$OUT/load" ./bench/cmd/load
"$OUT/benchserver" -protected 127.0.0.1:18080 -unprotected 127.0.0.1:18081 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
	if (exec 3<>/dev/tcp/127.0.0.1/18081) 2>/dev/null; then break; fi
	sleep 0.1
done
"$OUT/load" -protected http://127.0.0.1:18080 -unprotected http://127.0.0.1:18081 \
	-conns 16 -rounds 5 -duration 3s | tee "$OUT/server.md"
