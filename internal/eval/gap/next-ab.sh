#!/usr/bin/env bash
# next-ab.sh: two sluice builds (or settings) beside HAProxy at several
# fixed maxconn, on the same two `next start` workers (a real Next.js
# app, not the suite's node:http renderer), at each of a list of offered
# rates; the fronts take turns, each round's order rotated by one from
# the round before's (over every rate), so that the first turn at a new
# rate, whose workers' CPU per request was often the round's highest,
# falls on each front in turn, and the machine's drift on all of them.
#
#   (cd examples/nextjs && npm ci && npm run build)
#   go build -o /tmp/sluice ./cmd/sluice
#   BIN_A=/tmp/sluice BIN_B=/tmp/sluice CONC_B=32 internal/eval/gap/next-ab.sh
#   Q='io=60&cards=20' RATES='500 1000 2000' MAXCONNS=32 BIN_A=... BIN_B=... internal/eval/gap/next-ab.sh
#
# Q is the query of examples/nextjs's pages/listing.js. The default,
# cards=60, is a CPU-bound page of about 40 KB (3.5-5 ms of CPU each
# here; 250/s is about what the two workers sustain on one CPU of this
# kind of machine); the second example is the async one, a 60 ms wait and
# then a 20-card page, whose CPU per request falls from about 4 ms to
# under 2 as the workers hold more requests at once (about 500/s at 32
# each). RATES are the offered rates, ROUNDS the rounds at each.
#
# The workers are `next start` (NODE_ENV=production), both on CPU 1, as
# sluice's examples/nextjs/sluice.yaml runs them; they report nothing, so
# sluice reads their CPU demand from the kernel. Every front and `sluice
# bench` run on CPU 0. A and B are `sluice serve` with the workers as
# upstreams at concurrency CONC_A and CONC_B (default auto), every other
# key its default; HAProxy has `maxconn N` per worker for each N of
# MAXCONNS (default 1 4 32) and a 500 ms queue. A line per run gives
# successes, delivered/s, success %, p99, errors, for A and B the worker
# limits at its end, and the renderers' CPU per success (it moves with
# the machine, and with how many requests a worker holds). Loopback only;
# every process is ended by PID.
set -euo pipefail
Q=${Q:-cards=60}
. "$(dirname "$0")/common.sh"
app=$root/examples/nextjs
if [ ! -f "$app/.next/BUILD_ID" ]; then
	echo "next-ab.sh: build the example first: (cd examples/nextjs && npm ci && npm run build)" >&2
	exit 1
fi
workers=()
for port in 4150 4149; do
	(cd "$app" && PORT=$port NODE_ENV=production NEXT_TELEMETRY_DISABLED=1 \
		exec taskset -c 1 node_modules/.bin/next start -H 127.0.0.1 -p "$port") >"$work/worker-$port.log" 2>&1 &
	pids+=($!) workers+=($!)
done
start_front a "$BIN_A" 4151 4152 "${CONC_A:-auto}" "" 4150 4149
start_front b "$BIN_B" 4153 4154 "${CONC_B:-auto}" "" 4150 4149
fronts=("A 4151 4152" "B 4153 4154")
port=4155
for n in ${MAXCONNS:-1 4 32}; do
	start_haproxy "$port" "$n" 4150 4149
	fronts+=("haproxy-$n $port -")
	port=$((port + 1))
done
for f in "${fronts[@]}"; do
	read -r _ p _ <<<"$f"
	for _ in $(seq 200); do
		curl -sf -o /dev/null "http://127.0.0.1:$p/listing?cards=1" && break
		sleep 0.1
	done
done
# cpu_ticks: the workers' CPU so far, in clock ticks (after the command
# name, which next start sets to one with spaces).
cpu_ticks() { for w in "${workers[@]}"; do sed 's/.*) //' "/proc/$w/stat"; done | awk '{s += $12 + $13} END {print s}'; }
hz=$(getconf CLK_TCK)
run() { # name port admin rate
	local out lim="" c0 c1
	c0=$(cpu_ticks)
	out=$(taskset -c 0 "$BIN_A" bench -rate "$4" -duration "${DUR:-5s}" -json - "http://127.0.0.1:$2/listing?$Q" 2>/dev/null)
	c1=$(cpu_ticks)
	if [ "$3" != - ]; then
		lim=$(curl -s "127.0.0.1:$3/stats" | python3 -c "import json,sys; print([e['limit'] for e in json.load(sys.stdin)['proxy']['endpoints']])")
	fi
	echo "$out" | python3 -c 'import json,sys
d=json.load(sys.stdin)["total"]; n=max(1, d["successes"])
print(sys.argv[1], "@" + sys.argv[2], d["successes"], "ok", round(d["delivered_rps"]), "/s succ", round(100*d["success_ratio"],1), "p99", round(d["latency"]["p99_ns"]/1e6), "ms", d.get("errors",{}), sys.argv[3], "cpu/ok", round(1000*float(sys.argv[4])/float(sys.argv[5])/n, 2), "ms")' "$1" "$4" "$lim" "$((c1 - c0))" "$hz"
}
for f in "${fronts[@]}"; do # warm: V8's JIT, the connections, the limits
	read -r _ p _ <<<"$f"
	taskset -c 0 "$BIN_A" bench -rate 100 -duration 2s "http://127.0.0.1:$p/listing?$Q" >/dev/null 2>&1
done
t=0 # rounds so far, over every rate: the first front of a round moves on by one each round
for rate in ${RATES:-250 500 1000}; do
	for _ in $(seq "${ROUNDS:-3}"); do
		for k in $(seq 0 $((${#fronts[@]} - 1))); do
			run ${fronts[$(((k + t) % ${#fronts[@]}))]} "$rate"
		done
		t=$((t + 1))
	done
done
