'use strict';
// Preloaded (node -r counters.js examples/react-ssr/worker.js) into each
// Node.js worker of the evaluation suite's node-* scenarios. It changes
// nothing the worker does for a request; it adds what the suite reads from
// every renderer (internal/eval/pool.go), as the Go demo workers serve it:
//
//   GET /__worker/stats  {"rendered", "inflight", "peakInflight"}: pages
//                        rendered (renderToString calls that returned),
//                        requests in the process now and at most so far.
//
// and, with BENCH_PAGE_ITEMS=N (1..PAGE_SIZE), pages of N listing cards
// instead of the example's 200: the async workload's small page (a ~2 ms
// render after its I/O wait). A request's ?cards=M then gets the first M
// of those N (eval -node-react-mix draws it: pages of mixed sizes).
//
// With BENCH_RENDERS=N (1..50) each page is rendered N times over, the
// last render returned: a heavier page than the example's whole one (N
// times its CPU) with the same markup, for render costs of a hundred
// milliseconds and more. Each render counts in "rendered".
//
// With BENCH_NO_SATURATION=1 the worker's Sluice-Saturation header is
// dropped before it is written: a worker that reports nothing, as one not
// run by sluice-worker, whose limit sluice finds from its throughput alone.
//
// The worker is the main module (process.argv[1]); react-dom/server and
// page.js are resolved from its directory, so that the worker gets the
// very module objects changed here. Written by the suite (internal/eval/node).

const http = require('node:http');
const path = require('node:path');

const STATS_PATH = '/__worker/stats';

const workerDir = path.dirname(path.resolve(process.argv[1]));
const load = (id) => require(require.resolve(id, { paths: [workerDir] }));

let rendered = 0;
let inflight = 0;
let peak = 0;

// worker.js destructures renderToString when it first requires
// react-dom/server, after this preload: it gets the counting one.
const server = load('react-dom/server');
const renderToString = server.renderToString;
const renders = Math.min(Math.max(Number.parseInt(process.env.BENCH_RENDERS || '1', 10) || 1, 1), 50);
server.renderToString = function countedRenderToString() {
  let html;
  for (let i = 0; i < renders; i++) {
    html = renderToString.apply(this, arguments);
    rendered++;
  }
  return html;
};

const items = Number.parseInt(process.env.BENCH_PAGE_ITEMS || '0', 10);
if (items > 0) {
  const page = load('./page.js');
  const listings = page.listings;
  // The page's own arguments pass through: ?cards=N (listings' size)
  // still asks for the first N of these.
  page.listings = function fewerListings(...args) {
    const data = listings.apply(this, args);
    return { ...data, items: data.items.slice(0, items) };
  };
}

if (process.env.BENCH_NO_SATURATION === '1') {
  const setHeader = http.ServerResponse.prototype.setHeader;
  http.ServerResponse.prototype.setHeader = function quietSetHeader(name, value) {
    if (String(name).toLowerCase() === 'sluice-saturation') return this;
    return setHeader.call(this, name, value);
  };
}

// Met at emit, on the prototype: sluice-worker wraps each server's own
// emit (instance property) around this one, so readiness is answered
// before and every other request passes here first.
const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function countingEmit(event, req, res) {
  if (event !== 'request') return emit.apply(this, arguments);
  if (req.url === STATS_PATH) {
    const body = JSON.stringify({ rendered, inflight, peakInflight: peak });
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-store' });
    res.end(body);
    return true;
  }
  inflight++;
  peak = Math.max(peak, inflight);
  res.once('close', () => { inflight--; });
  return emit.apply(this, arguments);
};
