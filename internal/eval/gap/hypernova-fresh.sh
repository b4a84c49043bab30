#!/usr/bin/env bash
# hypernova-fresh.sh: a fresh sluice, started anew each round, in front of
# two Hypernova workers (internal/eval/hypernova, its npm ci done) on the
# shared cores, offered POST /batch jobs of ITEMS cards at RATE1/s for D1,
# then RATE2/s for D2: what a front's first seconds serve where renders
# are slow and the workers report nothing (sluice reads their loops from
# the kernel). Prints each round's phases (goodput/s, success %, p99 ms)
# and its series (goodput/errors/p99 per 250 ms).
#
#   go build -o /tmp/sluice ./cmd/sluice
#   BIN=/tmp/sluice ITEMS=200 ROUNDS=4 internal/eval/gap/hypernova-fresh.sh
#   BINS="/tmp/sluice-before /tmp/sluice" ITEMS=23 RATE1=300 D2=0 ROUNDS=6 internal/eval/gap/hypernova-fresh.sh
#
# BINS compares builds: each round starts each anew in turn, in an order
# reversed every other round, over the same workers (D2=0: one phase).
# IDLE (0) seconds pass between a front's readiness and its load, as the
# suite's runs wait for a quiet machine before theirs.
#
# The defaults (ITEMS=200, 53/s then 105/s) are about 1x and 2x of two
# workers rendering the whole page on this 2-core machine. Loopback only;
# every process started is ended by PID.
set -euo pipefail
read -r -a bins <<<"${BINS:-${BIN:?set BIN to a sluice binary, or BINS to several}}"
BIN=${bins[0]}
root=$(cd "$(dirname "$0")/../../.." && pwd)
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
cd "$root/internal/eval/hypernova"
for port in 4501 4502; do
	PORT=$port node worker.js >"$work/worker-$port.log" 2>&1 & pids+=($!)
done
body='{"page":{"name":"Page","data":{"page":7,"items":'${ITEMS:-200}'}}}'
job() { curl -sf -o /dev/null -H 'Content-Type: application/json' -d "$body" "http://127.0.0.1:$1/batch"; }
for _ in $(seq 100); do
	job 4501 && job 4502 && break
	sleep 0.1
done
# V8 compiles the renderer as it runs: warm both workers first.
for port in 4501 4502; do
	"$BIN" bench -rate 20 -duration 2s -method POST -H 'Content-Type: application/json' -body "$body" \
		"http://127.0.0.1:$port/batch" >/dev/null 2>&1
done
cat >"$work/front.yaml" <<Y
server: {listen: 127.0.0.1:4503}
admin: {listen: "off"}
upstreams:
  servers:
    - {address: 127.0.0.1:4501}
    - {address: 127.0.0.1:4502}
Y
ramp="${RATE1:-53}:${D1:-5s}"
[ "${D2:-5s}" != 0 ] && ramp="$ramp,${RATE2:-105}:${D2:-5s}"
for r in $(seq "${ROUNDS:-3}"); do
	order=("${bins[@]}")
	if [ $((r % 2)) = 0 ]; then
		order=()
		for ((k = ${#bins[@]} - 1; k >= 0; k--)); do order+=("${bins[$k]}"); done
	fi
	for bin in "${order[@]}"; do
		"$bin" serve -c "$work/front.yaml" >"$work/front.log" 2>&1 &
		front=$!
		for _ in $(seq 100); do
			curl -sf -o /dev/null http://127.0.0.1:4503/__sluice/ready && break
			sleep 0.05
		done
		sleep "${IDLE:-0}"
		"$BIN" bench -ramp "$ramp" -method POST \
			-H 'Content-Type: application/json' -body "$body" -json "$work/out.json" \
			"http://127.0.0.1:4503/batch" >/dev/null 2>&1
		kill "$front"
		wait "$front" 2>/dev/null || true
		python3 - "$work/out.json" "$r" "$bin" <<'P'
import json, sys
d = json.load(open(sys.argv[1]))
phases = ", ".join("%s %.1f/s %.1f%% p99 %d" % (p["name"], p["stats"]["goodput_rps"], 100 * p["stats"]["success_ratio"],
                   p["stats"]["latency"]["p99_ns"] / 1e6) for p in d["phases"])
print("round", sys.argv[2], sys.argv[3] + ":", phases)
print("  ", " ".join("%d/%d/%d" % (x["goodput_rps"], x["errors_rps"], x["p99_ns"] / 1e6) for x in d["series"]))
P
		sleep 3
	done
done
