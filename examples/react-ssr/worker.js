'use strict';
// A React server-side-rendering worker, as sluice expects one: a plain
// node:http handler that renders a page per request, run by sluice-worker
// (node/sluice-worker in this repository), which listens where sluice says,
// answers readiness, drains on SIGTERM and tells sluice on every response
// how busy this process's event loop is (Sluice-Saturation).
//
// Environment:
//   PORT                  listen on 127.0.0.1:PORT (sluice's workers.address: port)
//   SLUICE_SOCKET         listen on this unix socket instead (workers.address: unix)
//   NODE_ENV              React's build; unset means production (the fast one)
//   REACT_SSR_HOLD_ADDR   tests only: host:port of a TCP hook; see hold below
//
// Routes (every response carries X-Worker-Pid: <process.pid> and
// Sluice-Saturation: <event-loop utilization, 0.000..1.000>):
//   GET  /          the listing page, renderToString (?page=1..50, ?q=text,
//                   ?cards=1..200: a lighter page of the first N cards)
//   GET  /stream    the same page streamed with renderToPipeableStream, the
//                   reviews behind a Suspense boundary
//   GET  /healthz   200 "ok", 503 once draining: readiness for sluice's
//                   workers.readyPath, answered by sluice-worker
//   POST /batch     Hypernova's batch API: {token: {name, data}} ->
//                   {success, error, results: {token: {name, html, ...}}}
//
// Async mode: ?io=MS (0..10000, default 0) on GET / and GET /stream makes
// the request first wait MS milliseconds on a timer, standing for a data
// fetch, before it renders. The event loop is free meanwhile, so a worker
// can hold many such requests at once: the workload for which sluice finds
// a worker's concurrency from its saturation. A wait that outlasts the
// deadline sluice sent (Sluice-Timeout) ends in 504 without rendering.

// React chooses its development or production build when first required.
if (!process.env.NODE_ENV) process.env.NODE_ENV = 'production';

const net = require('node:net');
const { setTimeout: sleep } = require('node:timers/promises');
const React = require('react');
const { renderToString, renderToPipeableStream } = require('react-dom/server');
const sluice = require('sluice-worker');
const page = require('./page');

const h = React.createElement;

const MAX_PAGE = 50;
const MAX_BATCH_BYTES = 1 << 20;
const STREAM_ABORT_MS = 10_000; // a streamed render that takes longer is cut
const HOLD_MAX_MS = 30_000; // a held request proceeds after this at the latest
const FORCE_EXIT_MS = 30_000; // after SIGTERM, exit 1 if requests still run
const MAX_IO_MS = 10_000;

const pid = String(process.pid);

function log(msg) {
  process.stdout.write(`react-ssr[${pid}]: ${msg}\n`);
}

function send(res, status, type, body, extra) {
  res.writeHead(status, {
    'Content-Type': type,
    'Content-Length': Buffer.byteLength(body),
    ...extra,
  });
  res.end(body);
}

// cardCount is ?cards=N, clamped to 1..200 (the full page, the default).
function cardCount(url) {
  const n = Number.parseInt(url.searchParams.get('cards') || '200', 10);
  return Number.isFinite(n) ? Math.min(Math.max(n, 1), 200) : 200;
}

function pageNumber(url) {
  const n = Number.parseInt(url.searchParams.get('page') || '1', 10);
  return Number.isFinite(n) ? Math.min(Math.max(n, 1), MAX_PAGE) : 1;
}

// ioMillis is ?io=MS, clamped to 0..MAX_IO_MS; anything else is 0.
function ioMillis(url) {
  const n = Number.parseInt(url.searchParams.get('io') || '0', 10);
  return Number.isFinite(n) ? Math.min(Math.max(n, 0), MAX_IO_MS) : 0;
}

// io waits ?io=MS on a timer, as a page would for its data. It resolves
// false if sluice's deadline for the request passed first (or sluice gave
// up on it): rendering then would be work nobody reads.
async function io(url, req) {
  const ms = ioMillis(url);
  if (ms === 0) return true;
  try {
    await sleep(ms, undefined, { signal: req.sluice.signal });
    return true;
  } catch (err) {
    if (err.name === 'AbortError') return false;
    throw err;
  }
}

// hold lets a test keep a request inside the worker for as long as it needs:
// with REACT_SSR_HOLD_ADDR set and ?hold=NAME in the URL, the worker connects
// to that address, writes "NAME PID\n" and renders only once the test closes
// the connection (or writes anything), or after HOLD_MAX_MS. The test thus
// knows the request has reached a worker, which nothing else in a black-box
// test can show. Without the variable, ?hold is ignored.
function hold(url) {
  const addr = process.env.REACT_SSR_HOLD_ADDR;
  const name = url.searchParams.get('hold');
  if (!addr || !name) return Promise.resolve();
  const sep = addr.lastIndexOf(':');
  return new Promise((resolve) => {
    const sock = net.connect({ host: addr.slice(0, sep), port: Number(addr.slice(sep + 1)) }, () => {
      sock.write(`${name} ${pid}\n`);
    });
    const timer = setTimeout(release, HOLD_MAX_MS);
    function release() {
      clearTimeout(timer);
      sock.destroy();
      resolve();
    }
    sock.on('data', release);
    sock.on('end', release);
    sock.on('error', release);
    sock.on('close', release);
  });
}

function renderPage(url, res) {
  const start = process.hrtime.bigint();
  const body = renderToString(h(page.ListingPage, {
    data: page.listings(pageNumber(url), cardCount(url)),
    query: url.searchParams.get('q') || '',
  }));
  const html = '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">' +
    '<title>Stays · react-ssr example</title></head><body><div id="root">' +
    body + '</div></body></html>';
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  send(res, 200, 'text/html; charset=utf-8', html, { 'Server-Timing': `render;dur=${ms.toFixed(2)}` });
}

function streamPage(url, res) {
  const n = pageNumber(url);
  // The reviews arrive a moment after the shell, as from a slower service.
  const reviews = new Promise((resolve) => setImmediate(() => resolve(page.reviewsFor(n))));
  const tree = h(page.Document, null,
    h(page.ListingPage, {
      data: page.listings(n),
      query: url.searchParams.get('q') || '',
      reviews: h(React.Suspense, { fallback: h(page.ReviewsFallback) }, h(page.Reviews, { promise: reviews })),
    }));
  let failed = false;
  const stream = renderToPipeableStream(tree, {
    onShellReady() {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      stream.pipe(res);
    },
    onShellError(err) {
      failed = true;
      log(`stream shell error: ${err && err.message}`);
      send(res, 500, 'text/plain; charset=utf-8', 'render failed\n');
    },
    onError(err) {
      if (!failed) log(`stream error: ${err && err.message}`);
    },
  });
  const timer = setTimeout(() => stream.abort(new Error('render timed out')), STREAM_ABORT_MS);
  res.on('close', () => clearTimeout(timer));
}

function serializeError(err) {
  return {
    name: (err && err.name) || 'Error',
    message: (err && err.message) || String(err),
    stack: err && typeof err.stack === 'string' ? err.stack.split('\n') : [],
  };
}

// BatchListingPage is ListingPage for the batch API, whose data are
// {page, query}: the worker looks the listings up, as it does for GET /.
function BatchListingPage({ page: n = 1, query = '' }) {
  const num = Math.min(Math.max(Number.parseInt(n, 10) || 1, 1), MAX_PAGE);
  return h(page.ListingPage, { data: page.listings(num), query });
}

const batchComponents = { ...page.components, ListingPage: BatchListingPage };

function renderJob(job) {
  const start = process.hrtime.bigint();
  const result = { name: job && job.name, html: null, meta: {}, duration: 0, statusCode: 200, success: false, error: null };
  try {
    const component = job && typeof job.name === 'string' && Object.hasOwn(batchComponents, job.name)
      ? batchComponents[job.name] : null;
    if (!component) {
      throw new ReferenceError(`Component named ${JSON.stringify(job && job.name)} not registered`);
    }
    result.html = renderToString(h(component, (job.data && typeof job.data === 'object') ? job.data : {}));
    result.success = true;
  } catch (err) {
    result.statusCode = 500;
    result.error = serializeError(err);
  }
  result.duration = Number(process.hrtime.bigint() - start) / 1e6;
  return result;
}

function batch(req, res) {
  const chunks = [];
  let size = 0;
  let tooLarge = false;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size > MAX_BATCH_BYTES) {
      tooLarge = true;
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    const reply = (status, obj) => send(res, status, 'application/json; charset=utf-8', JSON.stringify(obj));
    if (tooLarge) {
      reply(413, { success: false, error: serializeError(new RangeError(`batch larger than ${MAX_BATCH_BYTES} bytes`)), results: {} });
      return;
    }
    let jobs;
    try {
      jobs = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch (err) {
      reply(400, { success: false, error: serializeError(err), results: {} });
      return;
    }
    if (!jobs || typeof jobs !== 'object' || Array.isArray(jobs)) {
      reply(400, { success: false, error: serializeError(new TypeError('batch must be an object of {token: {name, data}}')), results: {} });
      return;
    }
    const results = {};
    for (const token of Object.keys(jobs)) results[token] = renderJob(jobs[token]);
    reply(200, { success: true, error: null, results });
  });
}

function deadlineExceeded(res) {
  send(res, 504, 'text/plain; charset=utf-8', 'deadline exceeded\n');
}

// handle serves every route but GET /healthz, which sluice-worker answers.
async function handle(req, res) {
  const url = new URL(req.url, 'http://worker');
  const route = `${req.method} ${url.pathname}`;
  switch (route) {
    case 'GET /':
    case 'HEAD /':
      await hold(url);
      if (await io(url, req)) renderPage(url, res);
      else deadlineExceeded(res);
      return;
    case 'GET /stream':
      await hold(url);
      if (await io(url, req)) streamPage(url, res);
      else deadlineExceeded(res);
      return;
    case 'POST /batch':
      batch(req, res);
      return;
  }
  if (['/', '/stream', '/healthz', '/batch'].includes(url.pathname)) {
    const allow = url.pathname === '/batch' ? 'POST' : 'GET, HEAD';
    send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n', { Allow: allow });
    return;
  }
  send(res, 404, 'text/plain; charset=utf-8', 'not found\n');
}

sluice.serve((req, res) => {
  handle(req, res).catch((err) => {
    log(`error: ${err && err.stack}`);
    if (!res.headersSent) send(res, 500, 'text/plain; charset=utf-8', 'internal error\n');
    else res.destroy(err);
  });
}, {
  readyPath: '/healthz',
  headers: { 'X-Worker-Pid': pid },
  drainTimeoutMs: FORCE_EXIT_MS,
  log,
});
