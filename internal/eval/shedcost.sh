#!/bin/sh
# shedcost.sh: the CPU of a shed. `sluice serve` with every request shed
# (limit: one worker holding its one slot, no queue) against a bare
# net/http server answering 503 (eval shed-server), offered the same open
# loop by `sluice bench`, alternately, ROUNDS times; each run's CPU is the
# server process's utime+stime from /proc over the run, also per 503 it
# answered (on a busy machine the load generator falls behind the rate).
# Prints each run and the medians. Loopback only.
#
#   internal/eval/shedcost.sh [SLUICE_BIN] [EVAL_BIN]
#   RATE=4000 DURATION=10s ROUNDS=5 internal/eval/shedcost.sh
#   BASELINE=/tmp/sluice-old internal/eval/shedcost.sh   # a second build beside, for a before/after
#   QUEUE=100 internal/eval/shedcost.sh                  # a full queue in front of the held slot: queue-full
#
# Without binaries it builds both from the working tree.
set -eu
RATE=${RATE:-4000}
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-5}
dir=$(mktemp -d)
trap 'kill $spid $bpid $epid 2>/dev/null; wait 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$dir"' EXIT
sluice=${1:-}
eval_bin=${2:-}
if [ -z "$sluice" ]; then go build -o "$dir/sluice" ./cmd/sluice; sluice=$dir/sluice; fi
if [ -z "$eval_bin" ]; then go build -o "$dir/eval" ./internal/eval/cmd/eval; eval_bin=$dir/eval; fi
base=$((20000 + $$ % 2000 * 5)) # below the ephemeral ports
eport=$base

# start_sluice BIN PORT ADMIN_PORT: sluice serve with one worker whose one
# slot is held, and no queue: every other request is shed (limit).
start_sluice() {
	cat >"$dir/sluice-$2.yaml" <<YAML
server:
  listen: 127.0.0.1:$2
  maxConcurrentRequests: 1
  backpressure:
    queueSize: ${QUEUE:-0}
admin:
  listen: 127.0.0.1:$3
workers:
  command: ["$1", "demo-worker"]
  count: 1
  concurrency: 1
  env: {SLUICE_DEMO_UNITS_PER_MS: "1"}
proxy:
  timeout: 120s
  lookahead: 0
YAML
	"$1" serve -c "$dir/sluice-$2.yaml" >"$dir/sluice-$2.log" 2>&1 &
}
sport=$((base + 1))
start_sluice "$sluice" $sport $((base + 2))
spid=$!
bpid=
if [ -n "${BASELINE:-}" ]; then
	bport=$((base + 3))
	start_sluice "$BASELINE" $bport $((base + 4))
	bpid=$!
fi
"$eval_bin" shed-server -listen 127.0.0.1:$eport >"$dir/eval.log" 2>&1 &
epid=$!
ready() { curl -sf -o /dev/null "http://127.0.0.1:$1$2"; }
for i in $(seq 100); do
	ready $sport /__sluice/ready && ready $eport /__floor/ready && { [ -z "$bpid" ] || ready $bport /__sluice/ready; } && break
	sleep 0.2
done
# Every request asks the worker for its longest sleep: the one admitted
# holds the slot (until its client gives up, after bench's 1 s timeout).
path="/?sleep=60000"

ticks() { awk '{print $14+$15}' /proc/$1/stat; }
hz=$(getconf CLK_TCK)
secs=$(echo "$DURATION" | sed 's/s$//')
run() { # pid port: prints the cores used over the run, the 503s answered, the CPU per 503 in us
	t0=$(ticks $1)
	"$sluice" bench -rate "$RATE" -duration "$DURATION" -json "$dir/out.json" "http://127.0.0.1:$2$path" >/dev/null
	t1=$(ticks $1)
	# the run's 503s, by Sluice-Shed reason or none, in the report's total
	n=$(sed -n '/"total"/,/"series"/p' "$dir/out.json" | grep -o '"503[^"]*": *[0-9]*' | awk -F: '{n += $NF} END {print n + 0}')
	echo "$t0 $t1 $hz $secs ${n:-0}" | awk '{printf "%.3f %d %.0f", ($2-$1)/$3/$4, $5, ($5 > 0) ? ($2-$1)/$3/$5*1e6 : 0}'
}
: >"$dir/s"; : >"$dir/b"; : >"$dir/e"
run $spid $sport >/dev/null; run $epid $eport >/dev/null # warm up
[ -z "$bpid" ] || run $bpid $bport >/dev/null
for r in $(seq "$ROUNDS"); do
	s=$(run $spid $sport); e=$(run $epid $eport)
	echo "$s" >>"$dir/s"; echo "$e" >>"$dir/e"
	echo "$s $e" | awk -v r=$r '{printf "round %d: sluice %.3f cores, %d 503s, %d us/503; net/http 503 %.3f cores, %d 503s, %d us/503; ratio per 503 %.2f\n", r, $1, $2, $3, $4, $5, $6, ($6 > 0) ? $3/$6 : 0}'
	if [ -n "$bpid" ]; then
		b=$(run $bpid $bport); echo "$b" >>"$dir/b"
		echo "$b $e" | awk -v r=$r '{printf "round %d: baseline %.3f cores, %d 503s, %d us/503; ratio per 503 %.2f\n", r, $1, $2, $3, ($6 > 0) ? $3/$6 : 0}'
	fi
done
med() { awk -v c=$2 '{print $c}' "$1" | sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
echo "$(med "$dir/s" 1) $(med "$dir/s" 3) $(med "$dir/e" 1) $(med "$dir/e" 3)" |
	awk -v rate=$RATE '{printf "median at %d/s offered: sluice %.3f cores, %d us/503; net/http 503 %.3f cores, %d us/503; ratio per 503 %.2f\n", rate, $1, $2, $3, $4, ($4 > 0) ? $2/$4 : 0}'
if [ -n "$bpid" ]; then
	echo "$(med "$dir/b" 1) $(med "$dir/b" 3) $(med "$dir/e" 3)" |
		awk '{printf "median baseline: %.3f cores, %d us/503; ratio per 503 %.2f\n", $1, $2, ($3 > 0) ? $2/$3 : 0}'
fi
