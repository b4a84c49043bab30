#!/usr/bin/env bash
# lookahead-ab.sh: two sluice builds or proxy.lookahead settings and HAProxy
# (no nginx, maxconn 1), side by side on the same CPU-bound Node workers on
# CPU 1 (two sharing it, or WORKERS=1: one with the core to itself), at one
# offered rate, rounds alternating their order (A B H, then H B A), so that
# the machine's drift falls on all three.
#
#   go build -o /tmp/sluice ./cmd/sluice
#   BIN_A=/tmp/sluice-before BIN_B=/tmp/sluice RATE=400 ROUNDS=10 internal/eval/gap/lookahead-ab.sh
#   BIN_A=/tmp/sluice BIN_B=/tmp/sluice LA_B=0 RATE=400 ROUNDS=10 internal/eval/gap/lookahead-ab.sh
#
# LA_A and LA_B set proxy.lookahead for front A and B (unset: the build's
# default). The workers are examples/react-ssr/worker.js (npm ci there
# first) with ITEMS (60) cards of Q (?page=7), reporting nothing unless
# REPORTS=1; the fronts and `sluice bench` run on CPU 0, at concurrency 1 a
# worker. Each run offers RATE/s for DUR (5s) and prints successes,
# delivered/s, the workers' CPU seconds during it (from /proc/<pid>/stat),
# that CPU per delivered response, p99, and each worker's contention: the
# share of the time its main thread was runnable that it waited for a CPU
# (/proc/<pid>/schedstat), what withdraws sluice's lookahead. Loopback
# only; every process is ended by PID.
set -euo pipefail
ITEMS=${ITEMS:-60}
Q=${Q:-?page=7}
. "$(dirname "$0")/common.sh"
ports=(4390)
[ "${WORKERS:-2}" = 1 ] || ports+=(4389)
start_workers "${ports[@]}"
workers=("${pids[@]}")
front() { # name port admin binary lookahead
	{
		echo "server: {listen: 127.0.0.1:$2, maxConcurrentRequests: 0}"
		echo "admin: {listen: 127.0.0.1:$3}"
		[ -n "$5" ] && echo "proxy: {lookahead: $5}"
		echo "upstreams:"
		echo "  servers:"
		for w in "${ports[@]}"; do
			echo "    - {address: 127.0.0.1:$w, concurrency: 1}"
		done
	} >"$work/$1.yaml"
	taskset -c 0 "$4" serve -c "$work/$1.yaml" >"$work/$1.log" 2>&1 & pids+=($!)
}
front A 4391 4392 "$BIN_A" "${LA_A:-}"
front B 4394 4395 "$BIN_B" "${LA_B:-}"
start_haproxy 4393 1 "${ports[@]}"
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
sched() { # each worker's main thread's time run and time waiting for a CPU, ns
	local p
	for p in "${workers[@]}"; do awk '{printf "%s %s ", $1, $2}' "/proc/$p/schedstat"; done
}
hz=$(getconf CLK_TCK)
run() { # name port
	local c0 c1 s0 s1 out
	sleep 1 # the last run's queue, rendered
	c0=$(cpu_ticks)
	s0=$(sched)
	out=$(taskset -c 0 "$BIN_A" bench -rate "${RATE:-400}" -duration "${DUR:-5s}" -json - "http://127.0.0.1:$2/$Q" 2>/dev/null)
	c1=$(cpu_ticks)
	s1=$(sched)
	echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); t=d["total"]; cpu=('"$c1"'-'"$c0"')/'"$hz"'; n=t["delivered_rps"]*d["elapsed_ns"]/1e9
a, b = [int(x) for x in "'"$s0"'".split()], [int(x) for x in "'"$s1"'".split()]
c = [round((b[i+1]-a[i+1])/max(1, b[i]-a[i]+b[i+1]-a[i+1]), 2) for i in range(0, len(a), 2)]
print("'"$1"'", t["successes"], "ok", round(t["delivered_rps"]), "/s workers", round(cpu,2), "s of CPU,", round(1000*cpu/max(n,1),2), "ms a response, p99", round(t["latency"]["p99_ns"]/1e6), "ms, contention", c)'
}
for p in 4391 4394 4393; do # warm: V8's JIT, the connections
	taskset -c 0 "$BIN_A" bench -rate 200 -duration 3s "http://127.0.0.1:$p/$Q" >/dev/null 2>&1
done
for r in $(seq "${ROUNDS:-6}"); do
	if [ $((r % 2)) = 1 ]; then run A 4391; run B 4394; run haproxy 4393
	else run haproxy 4393; run B 4394; run A 4391; fi
done
