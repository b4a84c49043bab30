#!/usr/bin/env bash
# shift-ab.sh: two sluice builds (or settings) beside HAProxy tuned for
# CPU-bound workers (maxconn 1) and for async ones (maxconn 32), on the
# same two Node workers whose workload shifts under load: each front is
# offered a sequence of steps, one after the other, each its own query and
# rate, rounds alternating the fronts' order (A B H1 H32, then H32 H1 B A)
# so that the machine's drift falls on all four. What a hand-tuned front
# cannot follow and a self-tuned one must.
#
#   go build -o /tmp/sluice ./cmd/sluice
#   BIN_A=/tmp/sluice-before BIN_B=/tmp/sluice ROUNDS=2 internal/eval/gap/shift-ab.sh
#   STEPS='io=60&cards=20@300:4s io=240&cards=20@300:6s' BIN_A=... BIN_B=... internal/eval/gap/shift-ab.sh
#
# STEPS is QUERY@RATE:DURATION, space-separated. The default shifts from
# CPU-bound pages (cards=60, about 6 ms of CPU each; 150/s is about 1.4x
# what the two workers sustain on one CPU of this kind of machine) to async
# ones (a 60 ms wait, then a 20-card page; 500/s is under their loops'
# saturation) and back. The second example is a slower database: the same
# async pages, their wait four times as long.
#
# The workers are examples/react-ssr/worker.js (npm ci there first),
# reporting nothing (BENCH_NO_SATURATION=1: sluice reads their CPU demand
# from the kernel), both on CPU 1; every front and `sluice bench` run on
# CPU 0. A and B are `sluice serve` with the workers as upstreams, every
# other key its default; HAProxy has a 500 ms queue. A line per step gives
# successes, delivered/s, success %, p99 and errors, and one under it the
# goodput by send time in 250 ms buckets. Fronts rest QUIET (3s) between
# sequences, so that what one left inside the workers is done before the
# next starts. Loopback only; every process is ended by PID.
set -euo pipefail
ITEMS=${ITEMS-} # empty: each page has the cards its ?cards=N asks for
. "$(dirname "$0")/common.sh"
STEPS=${STEPS:-cards=60@150:4s io=60&cards=20@500:4s cards=60@150:4s}
start_workers 4170 4169
start_front a "$BIN_A" 4171 4175 auto "" 4170 4169
start_front b "$BIN_B" 4172 4176 auto "" 4170 4169
start_haproxy 4173 1 4170 4169
start_haproxy 4174 32 4170 4169
for port in 4171 4172 4173 4174; do
	for _ in $(seq 100); do
		curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && break
		sleep 0.1
	done
done
for port in 4171 4172 4173 4174; do # warm: V8's JIT, the connections
	taskset -c 0 "$BIN_A" bench -rate 100 -duration 2s -query "io=60&cards=20" "http://127.0.0.1:$port/" >/dev/null 2>&1
done
sequence() { # name port
	local step q rate dur
	for step in $STEPS; do
		q=${step%@*} rate=${step#*@} dur=${rate#*:} rate=${rate%:*}
		taskset -c 0 "$BIN_A" bench -rate "$rate" -duration "$dur" -query "$q" -json - "http://127.0.0.1:$2/" 2>/dev/null |
			python3 -c 'import json,sys
r=json.load(sys.stdin); d=r["total"]
print(sys.argv[1], sys.argv[2], sys.argv[3], d["successes"], "ok", round(d["delivered_rps"]), "/s succ", round(100*d["success_ratio"],1), "p99", round(d["latency"]["p99_ns"]/1e6), "ms", d.get("errors",{}))
print("   ", [round(p["goodput_rps"]) for p in r["series"]])' "$1" "$q" "$rate"
	done
	sleep "${QUIET:-3}"
}
sleep "${QUIET:-3}"
for r in $(seq "${ROUNDS:-2}"); do
	if [ $((r % 2)) = 1 ]; then
		sequence A 4171; sequence B 4172; sequence haproxy-1 4173; sequence haproxy-32 4174
	else
		sequence haproxy-32 4174; sequence haproxy-1 4173; sequence B 4172; sequence A 4171
	fi
done
