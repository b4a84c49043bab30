#!/usr/bin/env bash
# roll-ab.sh: what a rolling restart costs behind sluice, against the same
# load without one: sluice supervising two Hypernova workers
# (internal/eval/hypernova/worker.js, `npm ci` there first; every other key
# its default), offered RATE/s of POST /batch for DUR in each run, a
# rolling restart (POST /workers/restart) 1 s into the R runs and none in
# the N runs. One sluice runs for each of MODES, the workers.roll values
# to compare (default: surge replace), each with two workers of its own; the
# N runs go to the first. An entry MODE@BINARY runs that sluice binary in
# place of SLUICE (two builds side by side: MODES="surge surge@/tmp/b"). The runs of a round take turns in an order
# rotated by one each round, so that the machine's drift falls on all.
# Each run waits for the instance's two ready workers and QUIET (3s)
# before it starts.
#
#   go build -o /tmp/sluice ./cmd/sluice
#   SLUICE=/tmp/sluice RATE=300 ROUNDS=4 internal/eval/gap/roll-ab.sh
#   MODES=surge SLUICE=/tmp/sluice internal/eval/gap/roll-ab.sh
#   MODES="surge surge@/tmp/sluice-b" SLUICE=/tmp/sluice RATE=330 ROUNDS=8 internal/eval/gap/roll-ab.sh
#
# HAPROXY=1 adds nginx -> HAProxy as the suite runs it (leastconn, maxconn
# 1, a 500 ms queue, health checks POST /batch every second, fall 2 rise
# 1, redispatch) over two workers of its own, with runs HN (no roll) and
# HR (each worker stopped, started again and waited for until it renders
# a job, one after the other, 1 s into the load, as the suite's deploy).
#
# A line per run gives the success %, p99, errors and the goodput of each
# second (by send time); the rolls' durations close the output. Every
# process shares the machine's cores, as the suite's Hypernova scenario
# runs them. Loopback only; every process is ended by PID.
set -euo pipefail
SLUICE=${SLUICE:?set SLUICE to a sluice binary}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}" $(cat "$work"/hw-*.pid 2>/dev/null); do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT
. "$(dirname "${BASH_SOURCE[0]}")/hypernova.sh"
read -r -a modes <<<"${MODES:-surge replace}"
label() { local l=${1//\//_}; echo "${l//@/-}"; } # an entry's name in files and lines
port=4140
for e in "${modes[@]}"; do
	bin=$SLUICE
	[[ $e == *@* ]] && bin=${e#*@}
	start_supervised "$(label "$e")" "$bin" $port "${e%%@*}"
	port=$((port + 2))
done
# nginx (4130) -> HAProxy (4131) -> workers 4132 and 4133.
hworker() { # i: start the HAProxy turn's worker i, its PID in hw-i.pid
	PORT=$((4132 + $1)) NODE_ENV=production node "$root/internal/eval/hypernova/worker.js" >>"$work/hw-$1.log" 2>&1 &
	echo $! >"$work/hw-$1.pid"
}
hready() { renders $((4132 + $1)); } # i: until worker i renders a job, or 20 s
hroll() { # each worker stopped (SIGTERM), started again and waited for, in turn
	local i p
	for i in 0 1; do
		p=$(cat "$work/hw-$i.pid")
		kill "$p"
		while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
		hworker "$i"
		hready "$i"
	done
}
if [ "${HAPROXY:-0}" = 1 ]; then
	hworker 0
	hworker 1
	start_nginx_haproxy 4130 4131 4132 4133
	hready 0
	hready 1
fi
load=(-method POST -body "@$work/job.json" -H "Content-Type: application/json")
if [ "${HAPROXY:-0}" = 1 ]; then
	"$SLUICE" bench "${load[@]}" -rate 100 -duration 3s "http://127.0.0.1:4130/batch" >/dev/null 2>&1 # warm: V8's JIT
fi
port=4140
for m in "${modes[@]}"; do
	await $((port + 1))
	"$SLUICE" bench "${load[@]}" -rate 100 -duration 3s "http://127.0.0.1:$port/batch" >/dev/null 2>&1 # warm: V8's JIT
	port=$((port + 2))
done
run() { # name port roll(0|1) [h: the nginx -> HAProxy turn]
	local roller=""
	if [ "$3" = 1 ] && [ "${4:-}" = h ]; then
		(sleep 1 && t0=$EPOCHREALTIME && hroll && awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "took=%.2fs\n", b - a }' >>"$work/hroll.log") &
		roller=$!
	elif [ "$3" = 1 ]; then
		(sleep 1 && curl -s -X POST "127.0.0.1:$(($2 + 1))/workers/restart" >/dev/null) &
		roller=$!
	fi
	"$SLUICE" bench "${load[@]}" -rate "${RATE:-300}" -duration "${DUR:-12s}" -json - "http://127.0.0.1:$2/batch" 2>/dev/null |
		python3 -c 'import json,sys
r=json.load(sys.stdin); d=r["total"]; s=r["series"]
per=[round(sum(x["goodput_rps"] for x in s[i:i+4])/4) for i in range(0, len(s), 4)]
print(sys.argv[1], "succ", round(100*d["success_ratio"],1), "p99", round(d["latency"]["p99_ns"]/1e6), "ms", d.get("errors",{}), "goodput each second", per)' "$1"
	if [ -n "$roller" ]; then wait "$roller"; fi
	if [ "${4:-}" = h ]; then
		hready 0
		hready 1
		sleep 2 # HAProxy's health checks: rise 1, every second
	else
		await $(($2 + 1))
	fi
	sleep "${QUIET:-3}"
}
turns=("N 4140 0")
if [ "${HAPROXY:-0}" = 1 ]; then
	turns+=("HN 4130 0 h" "HR 4130 1 h")
fi
port=4140
for e in "${modes[@]}"; do
	turns+=("R-$(label "$e") $port 1")
	port=$((port + 2))
done
for r in $(seq 0 $((${ROUNDS:-4} - 1))); do
	for i in $(seq 0 $((${#turns[@]} - 1))); do
		# shellcheck disable=SC2086
		run ${turns[$(((i + r) % ${#turns[@]}))]}
	done
done
if [ "${HAPROXY:-0}" = 1 ]; then
	echo "nginx -> HAProxy: $(tr '\n' ' ' <"$work/hroll.log")"
fi
for e in "${modes[@]}"; do
	m=$(label "$e")
	echo "$m: $(grep -h "rolling restart done" "$work/sluice-$m.log" | grep -o 'took=[^ ]*' | tr '\n' ' ')"
done
