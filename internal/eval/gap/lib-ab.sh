#!/usr/bin/env bash
# lib-ab.sh: the library face, two builds side by side. Each build's
# `eval lib-server` (the demo app in one Go process, GOMAXPROCS 2) serves
# CPU-bound ?cpu=10 behind admission's defaults as `sluice serve` maps them
# in library mode; with PLAIN=1 a third runs the same app on plain net/http
# (P: it renders every request its clients gave up on, a backlog that takes
# the CPU from the turn after it, so read its neighbours' lines with care).
# Each round gives every server a turn at every rate in RATES, in an order
# reversed every other round, each DUR (5s) of open-loop load with a 1 s
# client timeout. The eval binaries carry the library (its lib-server), so
# they are what is compared:
#
#   go build -o /tmp/eval-before ./internal/eval/cmd/eval   # at the old commit
#   go build -o /tmp/eval ./internal/eval/cmd/eval
#   RATES="180 360" ROUNDS=6 internal/eval/gap/lib-ab.sh /tmp/eval-before /tmp/eval
#
# UNITS is the demo work's calibration, units per ms (38000, about 10 ms
# of CPU for ?cpu=10 on this project's 2-core VM; the suite logs its own as
# unitsPerMs). RATES are absolute: measure the capacity first (the suite's
# goodput scenario logs it) and give rates around it. A line per run:
# server, rate, success %, goodput/s, p99 of the successes, errors.
# Loopback only; every process is ended by PID.
set -euo pipefail
BIN_A=${1:?usage: lib-ab.sh EVAL_A EVAL_B}
BIN_B=${2:?usage: lib-ab.sh EVAL_A EVAL_B}
. "$(dirname "${BASH_SOURCE[0]}")/common.sh" # root, work, pids and their end
A=$BIN_A B=$BIN_B
units=${UNITS:-38000}
names=(A B P)
ports=(4301 4302 4303)
GOMAXPROCS=2 "$A" lib-server -admission -listen 127.0.0.1:4301 -units "$units" >"$work/A.log" 2>&1 & pids+=($!)
GOMAXPROCS=2 "$B" lib-server -admission -listen 127.0.0.1:4302 -units "$units" >"$work/B.log" 2>&1 & pids+=($!)
if [ "${PLAIN:-0}" = 1 ]; then
	GOMAXPROCS=2 "$A" lib-server -listen 127.0.0.1:4303 -units "$units" >"$work/P.log" 2>&1 & pids+=($!)
fi
for port in 4301 4302; do
	for _ in $(seq 100); do
		curl -fsS -o /dev/null "http://127.0.0.1:$port/__worker/ready" 2>/dev/null && break
		sleep 0.1
	done
done
# The load generator: SLUICE, or sluice built into the work directory.
bench=${SLUICE:-$work/sluice}
if [ ! -x "$bench" ]; then
	(cd "$root" && go build -o "$bench" ./cmd/sluice)
fi
turns=(0 1)
[ "${PLAIN:-0}" = 1 ] && turns=(0 1 2)
for r in $(seq "${ROUNDS:-6}"); do
	order=("${turns[@]}")
	if [ $((r % 2)) = 0 ]; then
		order=()
		for ((k = ${#turns[@]} - 1; k >= 0; k--)); do order+=("${turns[$k]}"); done
	fi
	for rate in ${RATES:-180 360}; do
		for i in "${order[@]}"; do
			"$bench" bench -rate "$rate" -duration "${DUR:-5s}" -timeout 1s -json - "http://127.0.0.1:${ports[$i]}/?cpu=10" 2>/dev/null |
				python3 -c 'import json,sys
r=json.load(sys.stdin); d=r["total"]
print(sys.argv[1], sys.argv[2], "succ", round(100*d["success_ratio"],1), "goodput", round(d["goodput_rps"],1), "p99", round(d["latency"]["p99_ns"]/1e6), "ms", d.get("errors",{}))' "${names[$i]}" "$rate"
			sleep "${GAP:-2}"
		done
	done
done
