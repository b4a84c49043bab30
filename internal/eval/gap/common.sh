# common.sh: what async-ab.sh, fresh-ab.sh, hypernova-ab.sh, lib-ab.sh,
# lookahead-ab.sh, next-ab.sh and shift-ab.sh share, sourced by them: the
# two builds to compare (BIN_A and BIN_B, unless the script takes a list in
# BINS), a work directory, every process started ended by PID on exit (and
# waited for, so that a run after it finds its ports free), the async
# workers, and the fronts, on FRONT_CPUS (0; empty: on every CPU, as the
# shared layout runs them).
if [ -z "${BINS:-}" ]; then
	BIN_A=${BIN_A:?set BIN_A to a sluice binary}
	BIN_B=${BIN_B:?set BIN_B to a sluice binary}
fi
FRONT_CPUS=${FRONT_CPUS-0}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
Q=${Q:-?io=60}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# start_workers PORT...: an examples/react-ssr worker on each port, all on
# CPU 1, answering Q with an ITEMS-card page (20; set and empty: the
# cards ?cards=N asks for, 200 without it) and no saturation report
# (REPORTS=1: with sluice-worker's report).
start_workers() {
	cd "$root/examples/react-ssr"
	local quiet=1
	[ "${REPORTS:-0}" = 1 ] && quiet=0
	for port; do
		PORT=$port BENCH_PAGE_ITEMS=${ITEMS-20} BENCH_NO_SATURATION=$quiet NODE_ENV=production \
			taskset -c 1 node -r "$root/internal/eval/node/counters.js" worker.js >"$work/worker-$port.log" 2>&1 & pids+=($!)
	done
}

# spawn_front LOG COMMAND...: COMMAND in the background on FRONT_CPUS, its
# output to LOG, its PID (taskset execs it) added to pids.
spawn_front() {
	local log=$1
	shift
	if [ -n "$FRONT_CPUS" ]; then
		taskset -c "$FRONT_CPUS" "$@" >"$log" 2>&1 &
	else
		"$@" >"$log" 2>&1 &
	fi
	pids+=($!)
}

# start_haproxy PORT MAXCONN WORKER_PORT...: HAProxy on FRONT_CPUS at PORT,
# leastconn over the workers with maxconn MAXCONN each and a 500 ms queue.
start_haproxy() {
	local port=$1 maxconn=$2 w i=0
	shift 2
	{
		cat <<Y
global
  maxconn 5000
defaults
  mode http
  timeout connect 1s
  timeout client 10s
  timeout server 10s
  timeout queue 500ms
  option http-keep-alive
listen fe
  bind 127.0.0.1:$port
  balance leastconn
Y
		for w; do
			i=$((i + 1))
			echo "  server w$i 127.0.0.1:$w maxconn $maxconn"
		done
	} >"$work/haproxy-$port.cfg"
	spawn_front "$work/haproxy-$port.log" haproxy -f "$work/haproxy-$port.cfg"
}

# start_front NAME BINARY PORT ADMIN_PORT CONCURRENCY SERVER_KEYS WORKER_PORT...:
# `sluice serve` on FRONT_CPUS at PORT, the workers as upstreams at CONCURRENCY
# each, SERVER_KEYS (", key: value", or empty) added to its server: keys.
start_front() {
	local name=$1 bin=$2 port=$3 admin=$4 conc=$5 keys=$6 w
	shift 6
	{
		echo "server: {listen: 127.0.0.1:$port$keys}"
		echo "admin: {listen: 127.0.0.1:$admin}"
		echo "upstreams:"
		echo "  servers:"
		for w; do
			echo "    - {address: 127.0.0.1:$w, concurrency: $conc}"
		done
	} >"$work/$name.yaml"
	spawn_front "$work/$name.log" "$bin" serve -c "$work/$name.yaml"
}
