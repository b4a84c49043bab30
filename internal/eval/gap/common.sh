# common.sh: what async-ab.sh, fresh-ab.sh and shift-ab.sh share, sourced by them: the
# two builds to compare, a work directory, every process started ended by
# PID on exit (and waited for, so that a run after it finds its ports
# free), and the async workers.
BIN_A=${BIN_A:?set BIN_A to a sluice binary}
BIN_B=${BIN_B:?set BIN_B to a sluice binary}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
Q=${Q:-?io=60}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# start_workers PORT...: an examples/react-ssr worker on each port, all on
# CPU 1, answering Q with an ITEMS-card page (20; set and empty: the
# cards ?cards=N asks for, 200 without it) and no saturation report.
start_workers() {
	cd "$root/examples/react-ssr"
	for port; do
		PORT=$port BENCH_PAGE_ITEMS=${ITEMS-20} BENCH_NO_SATURATION=1 NODE_ENV=production \
			taskset -c 1 node -r "$root/internal/eval/node/counters.js" worker.js >"$work/worker-$port.log" 2>&1 & pids+=($!)
	done
}
