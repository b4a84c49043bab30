#!/usr/bin/env bash
# async-ab.sh: two sluice builds (or settings) and HAProxy (no nginx) side by
# side on the same two async Node workers, at one offered rate, rounds
# alternating their order (A B H, then H B A), so that the machine's drift
# falls on all three.
#
#   go build -o /tmp/sluice ./cmd/sluice
#   BIN_A=/tmp/sluice BIN_B=/tmp/sluice CONC_B=32 RATE=450 ROUNDS=8 internal/eval/gap/async-ab.sh
#
# The workers are examples/react-ssr/worker.js (npm ci there first) with
# ?io=60 (a 60 ms wait, then a 20-card page), reporting nothing
# (BENCH_NO_SATURATION=1), both on CPU 1; every front and `sluice bench`
# run on CPU 0. A and B are `sluice serve` with the workers as upstreams at
# concurrency CONC_A and CONC_B (default auto) and maxConcurrentRequests 0;
# HAProxy has `maxconn CONC` (default 32) per worker and a 500 ms queue.
# Each round offers RATE/s for DUR (5s) to each; a line per run gives
# successes, delivered/s, success %, p99, errors and, for A and B, the
# worker limits and the queue's bound at its end. Loopback only; every
# process is ended by PID.
set -euo pipefail
. "$(dirname "$0")/common.sh"
start_workers 4190 4189
start_front a "$BIN_A" 4191 4192 "${CONC_A:-auto}" ", maxConcurrentRequests: 0" 4190 4189
start_front b "$BIN_B" 4194 4195 "${CONC_B:-auto}" ", maxConcurrentRequests: 0" 4190 4189
start_haproxy 4193 "${CONC:-32}" 4190 4189
for _ in $(seq 100); do
	curl -sf -o /dev/null http://127.0.0.1:4191/healthz && curl -sf -o /dev/null http://127.0.0.1:4194/healthz &&
		curl -sf -o /dev/null http://127.0.0.1:4193/healthz && break
	sleep 0.1
done
run() { # name port admin
	local out lim=""
	out=$(taskset -c 0 "$BIN_A" bench -rate "${RATE:-450}" -duration "${DUR:-5s}" -json - "http://127.0.0.1:$2/$Q" 2>/dev/null)
	if [ -n "$3" ]; then
		lim=$(curl -s "127.0.0.1:$3/stats" | python3 -c "import json,sys; d=json.load(sys.stdin); print([e['limit'] for e in d['proxy']['endpoints']], d['admission'].get('queueBound'))")
	fi
	echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin)["total"]; print("'"$1"'", d["successes"], "ok", round(d["delivered_rps"]), "/s succ", round(100*d["success_ratio"],1), "p99", round(d["latency"]["p99_ns"]/1e6), "ms", d.get("errors",{}), "'"$lim"'")'
}
for p in 4191 4194 4193; do # warm: V8's JIT, the connections, the limits
	taskset -c 0 "$BIN_A" bench -rate "${RATE:-450}" -duration 3s "http://127.0.0.1:$p/$Q" >/dev/null 2>&1
done
for r in $(seq "${ROUNDS:-3}"); do
	if [ $((r % 2)) = 1 ]; then run A 4191 4192; run B 4194 4195; run haproxy 4193 ""
	else run haproxy 4193 ""; run B 4194 4195; run A 4191 4192; fi
done
