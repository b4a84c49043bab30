#!/usr/bin/env bash
# roll-ab.sh: what a rolling restart costs behind sluice, against the same
# load without one: sluice supervising two Hypernova workers
# (internal/eval/hypernova/worker.js, `npm ci` there first; every other key
# its default), offered RATE/s of POST /batch for DUR in each run, a
# rolling restart (POST /workers/restart) 1 s into the R runs and none in
# the N runs, rounds alternating their order (N R, then R N) so that the
# machine's drift falls on both. Each run waits for two ready workers and
# QUIET (3s) before it starts.
#
#   go build -o /tmp/sluice ./cmd/sluice
#   SLUICE=/tmp/sluice RATE=300 ROUNDS=4 internal/eval/gap/roll-ab.sh
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
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
printf '{"page":{"name":"Page","data":{"page":1,"items":23}}}' >"$work/job.json"
cat >"$work/sluice.yaml" <<Y
server: {listen: 127.0.0.1:4140}
admin: {listen: 127.0.0.1:4141}
workers:
  command: ["node", "$root/internal/eval/hypernova/worker.js"]
  count: 2
Y
"$SLUICE" serve -c "$work/sluice.yaml" >"$work/sluice.log" 2>&1 & pids+=($!)
ready() { # how many workers are ready
	curl -s 127.0.0.1:4141/stats | python3 -c 'import json,sys; print(sum(w["state"] == "ready" for w in json.load(sys.stdin)["supervisor"]["workers"]))' 2>/dev/null || echo 0
}
for _ in $(seq 100); do
	[ "$(ready)" = 2 ] && break
	sleep 0.2
done
load=(-method POST -body "@$work/job.json" -H "Content-Type: application/json")
"$SLUICE" bench "${load[@]}" -rate 100 -duration 3s http://127.0.0.1:4140/batch >/dev/null 2>&1 # warm: V8's JIT
run() { # name roll(0|1)
	local roller=""
	if [ "$2" = 1 ]; then
		(sleep 1 && curl -s -X POST 127.0.0.1:4141/workers/restart >/dev/null) &
		roller=$!
	fi
	"$SLUICE" bench "${load[@]}" -rate "${RATE:-300}" -duration "${DUR:-12s}" -json - http://127.0.0.1:4140/batch 2>/dev/null |
		python3 -c 'import json,sys
r=json.load(sys.stdin); d=r["total"]; s=r["series"]
per=[round(sum(x["goodput_rps"] for x in s[i:i+4])/4) for i in range(0, len(s), 4)]
print(sys.argv[1], "succ", round(100*d["success_ratio"],1), "p99", round(d["latency"]["p99_ns"]/1e6), "ms", d.get("errors",{}), "goodput each second", per)' "$1"
	if [ -n "$roller" ]; then wait "$roller"; fi
	for _ in $(seq 100); do
		[ "$(ready)" = 2 ] && break
		sleep 0.2
	done
	sleep "${QUIET:-3}"
}
for r in $(seq "${ROUNDS:-4}"); do
	if [ $((r % 2)) = 1 ]; then run N 0; run R 1; else run R 1; run N 0; fi
done
grep -h "rolling restart done" "$work/sluice.log"
