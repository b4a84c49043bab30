#!/usr/bin/env bash
# gap.sh: how long a single-threaded worker idles between one response and
# its next request, behind sluice (lookahead 0 and 1) and behind HAProxy
# (maxconn 1, 500 ms queue), side by side, the worker on a CPU of its own.
#
#   go build -o /tmp/sluice ./cmd/sluice
#   SLUICE=/tmp/sluice internal/eval/gap/gap.sh          # ROUNDS=3 RATE=300 SPIN_MS=10
#
# gap-worker.js spins SPIN_MS of CPU per request (one at a time, as a
# renderer) and answers 80 KB; GET /gap returns the gaps it saw since the
# last /gap (microseconds, those under 50 ms) and its busy share. Every
# front and the load generator run on CPU 0, the worker on CPU 1. Loopback
# only; every process is ended by PID.
set -euo pipefail
SLUICE=${SLUICE:?set SLUICE to a sluice binary}
ROUNDS=${ROUNDS:-3}; RATE=${RATE:-300}; DURATION=${DURATION:-5s}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
W=18390
PORT=$W SPIN_MS=${SPIN_MS:-10} taskset -c 1 node "$here/gap-worker.js" >"$work/worker.log" 2>&1 & pids+=($!)
for la in 0 1; do
	cat >"$work/sluice-$la.yaml" <<Y
server: {listen: 127.0.0.1:1838$la}
admin: {listen: "off"}
proxy: {lookahead: $la}
upstreams: {servers: [{address: 127.0.0.1:$W, concurrency: 1}]}
Y
	taskset -c 0 "$SLUICE" serve -c "$work/sluice-$la.yaml" >"$work/sluice-$la.log" 2>&1 & pids+=($!)
done
cat >"$work/haproxy.cfg" <<Y
global
    maxconn 8000
defaults
    mode http
    option abortonclose
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    timeout http-keep-alive 65s
    timeout queue 500ms
frontend fe
    bind 127.0.0.1:18389
    default_backend workers
backend workers
    balance leastconn
    server w0 127.0.0.1:$W maxconn 1
Y
taskset -c 0 haproxy -f "$work/haproxy.cfg" >"$work/haproxy.log" 2>&1 & pids+=($!)
sleep 2
echo "| round | front | goodput/s | delivered/s | worker busy | gap p50 | gap p90 | gap mean |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
for r in $(seq "$ROUNDS"); do
	for front in sluice-lookahead-0:18380 sluice-lookahead-1:18381 haproxy-maxconn-1:18389; do
		name=${front%%:*}; port=${front##*:}
		curl -s "127.0.0.1:$W/gap" >/dev/null
		taskset -c 0 "$SLUICE" bench -rate "$RATE" -duration "$DURATION" "http://127.0.0.1:$port/" >"$work/bench.txt" 2>&1
		g=$(curl -s "127.0.0.1:$W/gap")
		gp=$(awk '$1 == "1" {print $5 " | " $6; exit}' "$work/bench.txt")
		echo "$g" | node -e "const g=JSON.parse(require('fs').readFileSync(0));console.log('| $r | $name | $gp | '+(100*g.busy).toFixed(0)+'% | '+(g.p50Us/1000).toFixed(2)+' ms | '+(g.p90Us/1000).toFixed(2)+' ms | '+(g.meanUs/1000).toFixed(2)+' ms |')"
	done
done
