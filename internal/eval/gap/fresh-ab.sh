#!/usr/bin/env bash
# fresh-ab.sh: two sluice builds (or settings), each started fresh every
# round in front of the same two async Node workers and offered one rate
# at once, rounds alternating their order (A B, then B A): what a front
# loses while its workers' limits are first learned (a start or a deploy
# of sluice itself at peak), which async-ab.sh, whose fronts live across
# rounds, does not show.
#
#   go build -o /tmp/sluice ./cmd/sluice
#   BIN_A=/tmp/sluice-before BIN_B=/tmp/sluice RATE=420 ROUNDS=8 internal/eval/gap/fresh-ab.sh
#   REPORTS=1 HMAXCONN=32 BIN_A=/tmp/sluice-before BIN_B=/tmp/sluice RATE=550 ROUNDS=8 internal/eval/gap/fresh-ab.sh
#
# HMAXCONN=N adds HAProxy (maxconn N a worker, a 500 ms queue, started
# fresh too) to every round, after B (before it in the reversed rounds).
#
# The workers are examples/react-ssr/worker.js (npm ci there first) with
# ?io=60 (a 60 ms wait, then a 20-card page), reporting nothing
# (BENCH_NO_SATURATION=1), both on CPU 1; the fronts and `sluice bench`
# run on CPU 0. Each run offers RATE/s for DUR (5s) to a front started
# for it, and prints goodput, success %, p99 and its goodput by send
# time, in 250 ms buckets (SERIES=4: the first second's). Loopback only; every process is
# ended by PID.
set -euo pipefail
. "$(dirname "$0")/common.sh"
start_workers 4180 4179
cat >"$work/front.yaml" <<Y
server: {listen: 127.0.0.1:4181, trustedPeers: [127.0.0.1]}
admin: {listen: "off"}
upstreams:
  servers:
    - {address: 127.0.0.1:4180}
    - {address: 127.0.0.1:4179}
Y
for _ in $(seq 100); do
	curl -sf -o /dev/null "http://127.0.0.1:4180/$Q" && curl -sf -o /dev/null "http://127.0.0.1:4179/$Q" && break
	sleep 0.1
done
for port in 4180 4179; do # warm V8's JIT straight, as a front that has just started finds it
	taskset -c 0 "$BIN_A" bench -rate 100 -duration 2s "http://127.0.0.1:$port/$Q" >/dev/null 2>&1
done
# 100/s is past what slow renders serve: let the workers finish that
# backlog (up to 30 s), or the first round's front meets it instead.
for port in 4180 4179; do
	for _ in $(seq 300); do
		curl -sf "http://127.0.0.1:$port/__worker/stats" | grep -q '"inflight":0' && break
		sleep 0.1
	done
done
run() { # name binary (haproxy: HAProxy at HMAXCONN)
	local front out
	if [ "$2" = haproxy ]; then
		start_haproxy 4181 "$HMAXCONN" 4180 4179
		front=${pids[-1]}
		for _ in $(seq 100); do
			curl -sf -o /dev/null "http://127.0.0.1:4181/$Q" && break
			sleep 0.05
		done
	else
		taskset -c 0 "$2" serve -c "$work/front.yaml" >"$work/$1.log" 2>&1 &
		front=$!
		for _ in $(seq 100); do
			curl -sf -o /dev/null http://127.0.0.1:4181/__sluice/ready && break
			sleep 0.05
		done
		sleep 0.5 # the upstreams' first health checks
	fi
	out=$(taskset -c 0 "$BIN_A" bench -rate "${RATE:-420}" -duration "${DUR:-5s}" -json - "http://127.0.0.1:4181/$Q" 2>/dev/null)
	kill "$front"
	wait "$front" 2>/dev/null || true
	echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); t=d["total"]; s=d.get("series") or []
print("'"$1"'", round(t["goodput_rps"]), "/s succ", round(100*t["success_ratio"],1), "p99", round(t["latency"]["p99_ns"]/1e6), "ms; by send time", [round(x["goodput_rps"]) for x in s[:'"${SERIES:-40}"']])'
	sleep 3 # the workers finish what the front left them
}
for r in $(seq "${ROUNDS:-6}"); do
	if [ $((r % 2)) = 1 ]; then
		run A "$BIN_A"; run B "$BIN_B"; [ -n "${HMAXCONN:-}" ] && run H haproxy
	else
		[ -n "${HMAXCONN:-}" ] && run H haproxy; run B "$BIN_B"; run A "$BIN_A"
	fi
done
