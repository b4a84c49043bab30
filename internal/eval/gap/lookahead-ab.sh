#!/usr/bin/env bash
# lookahead-ab.sh: proxy.lookahead 1 (the default) against 0 and HAProxy
# (no nginx, maxconn 1), side by side on the same two CPU-bound Node
# workers sharing CPU 1, at one offered rate, rounds alternating their
# order (1 0 H, then H 0 1), so that the machine's drift falls on all three.
#
#   go build -o /tmp/sluice ./cmd/sluice
#   BIN_A=/tmp/sluice BIN_B=/tmp/sluice RATE=400 ROUNDS=10 internal/eval/gap/lookahead-ab.sh
#
# The workers are examples/react-ssr/worker.js (npm ci there first) with
# ITEMS (60) cards of Q (?page=7), reporting nothing unless REPORTS=1; the
# fronts and `sluice bench` run on CPU 0. BIN_A runs both sluice fronts at
# concurrency 1 a worker. Each run offers RATE/s for DUR (5s) and prints
# successes, delivered/s, the workers' CPU seconds during it (from
# /proc/<pid>/stat), that CPU per delivered response, and p99. Loopback
# only; every process is ended by PID.
set -euo pipefail
ITEMS=${ITEMS:-60}
Q=${Q:-?page=7}
. "$(dirname "$0")/common.sh"
start_workers 4390 4389
workers=("${pids[@]}")
lookahead_front() { # name port admin lookahead
	cat >"$work/$1.yaml" <<Y
server: {listen: 127.0.0.1:$2, maxConcurrentRequests: 0}
admin: {listen: 127.0.0.1:$3}
proxy: {lookahead: $4}
upstreams:
  servers:
    - {address: 127.0.0.1:4390, concurrency: 1}
    - {address: 127.0.0.1:4389, concurrency: 1}
Y
	taskset -c 0 "$BIN_A" serve -c "$work/$1.yaml" >"$work/$1.log" 2>&1 & pids+=($!)
}
lookahead_front la1 4391 4392 1
lookahead_front la0 4394 4395 0
start_haproxy 4393 1 4390 4389
for _ in $(seq 100); do
	curl -sf -o /dev/null "http://127.0.0.1:4391/$Q" && curl -sf -o /dev/null "http://127.0.0.1:4394/$Q" &&
		curl -sf -o /dev/null "http://127.0.0.1:4393/$Q" && break
	sleep 0.1
done
cpu_ticks() { # the workers' user and system time, in clock ticks
	local t=0 p
	for p in "${workers[@]}"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
	echo "$t"
}
hz=$(getconf CLK_TCK)
run() { # name port
	local c0 c1 out
	sleep 1 # the last run's queue, rendered
	c0=$(cpu_ticks)
	out=$(taskset -c 0 "$BIN_A" bench -rate "${RATE:-400}" -duration "${DUR:-5s}" -json - "http://127.0.0.1:$2/$Q" 2>/dev/null)
	c1=$(cpu_ticks)
	echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); t=d["total"]; cpu=('"$c1"'-'"$c0"')/'"$hz"'; n=t["delivered_rps"]*d["elapsed_ns"]/1e9
print("'"$1"'", t["successes"], "ok", round(t["delivered_rps"]), "/s workers", round(cpu,2), "s of CPU,", round(1000*cpu/max(n,1),2), "ms a response, p99", round(t["latency"]["p99_ns"]/1e6), "ms")'
}
for p in 4391 4394 4393; do # warm: V8's JIT, the connections
	taskset -c 0 "$BIN_A" bench -rate 200 -duration 3s "http://127.0.0.1:$p/$Q" >/dev/null 2>&1
done
for r in $(seq "${ROUNDS:-6}"); do
	if [ $((r % 2)) = 1 ]; then run lookahead-1 4391; run lookahead-0 4394; run haproxy 4393
	else run haproxy 4393; run lookahead-0 4394; run lookahead-1 4391; fi
done
