#!/usr/bin/env bash
# hypernova-ab.sh: sluice builds (or settings) and HAProxy side by side in
# front of the same two Hypernova workers (internal/eval/hypernova, its npm
# ci done), devMode, on the machine's shared cores as the suite's Hypernova
# scenario runs them, at one offered rate of POST /batch jobs of ITEMS
# cards (23: an 80 KB answer). Each round gives every front a turn of DUR
# (10s), in an order rotated by one each round, so that the machine's drift
# falls on all.
#
#   go build -o /tmp/sluice ./cmd/sluice
#   BINS="/tmp/sluice-before /tmp/sluice" RATE=500 ROUNDS=4 internal/eval/gap/hypernova-ab.sh
#
# The fronts live across the rounds (started once, warmed by a 2 s turn
# each), on every CPU unless FRONT_CPUS says (common.sh). HAProxy has
# maxconn 1 a worker, leastconn and a 500 ms queue. A
# line per run gives goodput and delivered/s, success %, p50 and p99, the
# workers' CPU per success (from /proc/<pid>/stat: the host's speed in that
# turn, which sets each ratio), errors and, for sluice, the worker limits at
# its end; SERIES=1 adds goodput/errors/p99 per 250 ms. Loopback only;
# every process is ended by PID.
set -euo pipefail
read -r -a bins <<<"${BINS:?set BINS to one or more sluice binaries}"
FRONT_CPUS=${FRONT_CPUS-} # the shared cores
. "$(dirname "$0")/common.sh"
body='{"page":{"name":"Page","data":{"page":7,"items":'${ITEMS:-23}'}}}'
bench() { "${bins[0]}" bench -method POST -H 'Content-Type: application/json' -body "$body" "$@"; }
cd "$root/internal/eval/hypernova"
workers=()
for port in 4501 4502; do
	PORT=$port NODE_ENV=production node worker.js >"$work/worker-$port.log" 2>&1 & pids+=($!)
	workers+=($!)
done
for _ in $(seq 200); do
	curl -sf -o /dev/null -H 'Content-Type: application/json' -d "$body" http://127.0.0.1:4501/batch &&
		curl -sf -o /dev/null -H 'Content-Type: application/json' -d "$body" http://127.0.0.1:4502/batch && break
	sleep 0.1
done
names=() ports=() admins=()
for i in "${!bins[@]}"; do
	start_front "front-$i" "${bins[$i]}" $((4510 + i)) $((4520 + i)) auto "" 4501 4502
	names+=("S$i") ports+=($((4510 + i))) admins+=($((4520 + i)))
done
start_haproxy 4530 1 4501 4502
names+=(haproxy) ports+=(4530) admins+=("")
for _ in $(seq 100); do
	ok=1
	for p in "${ports[@]}"; do curl -sf -o /dev/null -H 'Content-Type: application/json' -d "$body" "http://127.0.0.1:$p/batch" || ok=0; done
	[ $ok = 1 ] && break
	sleep 0.1
done
cpu() { # the workers' CPU time, in clock ticks
	local s=0 p
	for p in "${workers[@]}"; do s=$((s + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
	echo $s
}
run() { # name port admin
	local c0 c1 lim=""
	c0=$(cpu)
	bench -rate "${RATE:-300}" -duration "${DUR:-10s}" -json "$work/out.json" "http://127.0.0.1:$2/batch" >/dev/null 2>&1
	c1=$(cpu)
	if [ -n "$3" ]; then
		lim=$(curl -s "127.0.0.1:$3/stats" | python3 -c "import json,sys; print([e['limit'] for e in json.load(sys.stdin)['proxy']['endpoints']])")
	fi
	python3 - "$work/out.json" "$1" $((c1 - c0)) "$(getconf CLK_TCK)" "$lim" "${SERIES:-}" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
t = d["total"]
ms = int(sys.argv[3]) * 1000 / int(sys.argv[4]) / max(1, t["successes"])
print("%-8s goodput %6.1f/s delivered %6.1f/s succ %5.1f%% p50 %4d p99 %4d ms, %.2f ms CPU a success" % (
    sys.argv[2], t["goodput_rps"], t["delivered_rps"], 100 * t["success_ratio"], t["latency"]["p50_ns"] / 1e6,
    t["latency"]["p99_ns"] / 1e6, ms), t.get("errors"), sys.argv[5])
if sys.argv[6]:
    print("   ", " ".join("%d/%d/%d" % (x["goodput_rps"], x["errors_rps"], x["p99_ns"] / 1e6) for x in d["series"]))
P
}
for k in "${!names[@]}"; do # warm V8's JIT and the fronts
	bench -rate "${RATE:-300}" -duration 2s "http://127.0.0.1:${ports[$k]}/batch" >/dev/null 2>&1
done
n=${#names[@]}
for r in $(seq "${ROUNDS:-3}"); do
	for k in $(seq 0 $((n - 1))); do
		j=$(((k + r) % n))
		run "${names[$j]}" "${ports[$j]}" "${admins[$j]}"
		sleep "${GAP:-2}"
	done
done
