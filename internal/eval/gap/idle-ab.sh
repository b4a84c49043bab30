#!/usr/bin/env bash
# idle-ab.sh: what a load that resumes after an idle spell costs, two
# sluice builds side by side. Each build supervises two Hypernova workers of
# its own (internal/eval/hypernova/worker.js, `npm ci` there first; every
# other key its default), warmed by 5 s at 200/s; then each round gives
# every front a turn, in an order reversed every other round: QUIET (15s)
# idle, then RATE/s (280) of POST /batch for DUR (5s). A build's workers
# thus rest QUIET plus the other's turn between two of its loads, long
# enough for V8 to drop the code they no longer run.
#
#   go build -o /tmp/sluice ./cmd/sluice
#   internal/eval/gap/idle-ab.sh /tmp/sluice-before /tmp/sluice
#   RATE=250 ROUNDS=6 internal/eval/gap/idle-ab.sh /tmp/sluice-before /tmp/sluice
#   HAPROXY=1 RATE=250 internal/eval/gap/idle-ab.sh /tmp/sluice /tmp/sluice
#
# HAPROXY=1 adds nginx -> HAProxy as the suite runs it (leastconn, maxconn
# 1, a 500 ms queue, health checks POST /batch every second, fall 2 rise
# 1, redispatch) over two workers of its own (H), a third turn each round.
#
# A line per run gives the front (A, B, H), success %, p99, errors and
# goodput/p99 (ms) of each 250 ms of the first 1.5 s by send time. Every
# process shares the machine's cores, as the suite's Hypernova scenario
# runs them. Loopback only; every process is ended by PID.
set -euo pipefail
A=${1:?usage: idle-ab.sh SLUICE_A SLUICE_B}
B=${2:?usage: idle-ab.sh SLUICE_A SLUICE_B}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT
. "$(dirname "${BASH_SOURCE[0]}")/hypernova.sh"
load=(-method POST -body "@$work/job.json" -H "Content-Type: application/json")
start_supervised 0 "$A" 4270
start_supervised 1 "$B" 4272
for i in 0 1; do
	await $((4271 + 2 * i))
	"$A" bench "${load[@]}" -rate 200 -duration 5s "http://127.0.0.1:$((4270 + 2 * i))/batch" >/dev/null 2>&1 # warm: V8's JIT
done
names=(A B H)
ports=(4270 4272 4280)
turns=(0 1)
if [ "${HAPROXY:-0}" = 1 ]; then
	# nginx (4280) -> HAProxy (4281) -> workers 4282 and 4283.
	for i in 0 1; do
		PORT=$((4282 + i)) NODE_ENV=production node "$root/internal/eval/hypernova/worker.js" >"$work/hw-$i.log" 2>&1 &
		pids+=($!)
	done
	renders 4282
	renders 4283
	start_nginx_haproxy 4280 4281 4282 4283
	renders 4280
	"$A" bench "${load[@]}" -rate 200 -duration 5s "http://127.0.0.1:4280/batch" >/dev/null 2>&1 # warm: V8's JIT
	turns=(0 1 2)
fi
for r in $(seq "${ROUNDS:-6}"); do
	order=("${turns[@]}")
	if [ $((r % 2)) = 0 ]; then
		order=()
		for ((k = ${#turns[@]} - 1; k >= 0; k--)); do order+=("${turns[$k]}"); done
	fi
	for i in "${order[@]}"; do
		sleep "${QUIET:-15}"
		"$A" bench "${load[@]}" -rate "${RATE:-280}" -duration "${DUR:-5s}" -json - "http://127.0.0.1:${ports[$i]}/batch" 2>/dev/null |
			python3 -c 'import json,sys
r=json.load(sys.stdin); d=r["total"]; s=r["series"]
print(sys.argv[1], "succ", round(100*d["success_ratio"],1), "p99", round(d["latency"]["p99_ns"]/1e6), "ms", d.get("errors",{}), "first 1.5 s", " ".join("%d/%d" % (x["goodput_rps"], x["p99_ns"]/1e6) for x in s[:6]))' "${names[$i]}"
	done
done
