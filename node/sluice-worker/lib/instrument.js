'use strict';
// Per request: read the saturation meter as the request arrives, answer
// readiness, give the handler req.sluice, and stamp Sluice-Saturation (and,
// while draining, Connection: close) on the response when its headers are
// written.

const { createMeter, format, DEFAULT_WINDOW_MS } = require('./meter');
const { requestInfo } = require('./request');

const SATURATION_HEADER = 'Sluice-Saturation';
const DEFAULT_READY_PATH = '/healthz';

// A request instrumented twice (attach() on a server whose handler is also
// wrap()ped) is instrumented once, by the first.
const instrumented = Symbol('sluice-worker.instrumented');

let defaultMeter;

// processMeter is the meter shared by every wrap() and attach() that does
// not ask for another window: the event loop is the process's, and one
// meter makes saturation() read what the responses carry.
function processMeter() {
  if (!defaultMeter) defaultMeter = createMeter({ windowMs: DEFAULT_WINDOW_MS });
  return defaultMeter;
}

function meterFor(options) {
  if (options.meter) return options.meter;
  if (options.windowMs === undefined || options.windowMs === DEFAULT_WINDOW_MS) return processMeter();
  return createMeter({ windowMs: options.windowMs });
}

function readyPathOf(options) {
  const p = options.readyPath === undefined ? DEFAULT_READY_PATH : options.readyPath;
  if (p === null || p === false) return null; // the handler answers readiness itself
  if (typeof p !== 'string' || !p.startsWith('/')) {
    throw new TypeError(`sluice-worker: readyPath must be a path starting with "/", or false; got ${JSON.stringify(p)}`);
  }
  return p;
}

function headersOf(options) {
  const h = options.headers ?? {};
  if (typeof h !== 'object') throw new TypeError('sluice-worker: headers must be an object of name: value');
  return Object.entries(h);
}

// createInstrument returns instrument(req, res, state), which returns true
// when it has answered the request itself (readiness) and the handler must
// not run. state is the attached server's ({draining, onFinish}), or
// undefined for a handler wrap()ped without attach().
function createInstrument(options = {}) {
  const meter = meterFor(options);
  const readyPath = readyPathOf(options);
  const headers = headersOf(options);

  return function instrument(req, res, state) {
    if (req[instrumented]) return false;
    req[instrumented] = true;
    // Read the meter as the request arrives, not only when a response is
    // written. The meter is read lazily, so after an idle stretch (a
    // worker's first request, or a pause in traffic) its interval spans
    // the whole stretch, and a response read only at the end of a 150 ms
    // synchronous render would report that render diluted in seconds of
    // idling: 0.05 rather than 1. The front then took the worker for an
    // idle one and raised its limit (from 4 to 5 and 8 on two workers
    // rendering one request at a time, whose requests then interleaved
    // and took over a second). Read here, an interval that is already a
    // full window closes now, so the response's reading covers the time
    // since the request began. It is one more eventLoopUtilization() call.
    meter.read();
    // Set before the handler runs, so that it can still change them.
    for (const [name, value] of headers) res.setHeader(name, value);
    hookWriteHead(res, meter, state);
    guardLength(res);
    if (state) res.once('finish', state.onFinish);
    if (readyPath !== null && isReadiness(req, readyPath)) {
      answerReadiness(res, Boolean(state && state.draining));
      return true;
    }
    req.sluice = requestInfo(req.headers, Date.now(), res);
    return false;
  };
}

// hookWriteHead wraps this response's writeHead. Node writes implicit
// headers (res.write or res.end with no writeHead) through writeHead too,
// via _implicitHeader, so this one hook sees every response.
function hookWriteHead(res, meter, state) {
  const writeHead = res.writeHead;
  res.writeHead = function sluiceWriteHead() {
    if (!this.headersSent) {
      // A value the handler set, with setHeader or in writeHead's own
      // headers (which are applied after these), is kept.
      if (!this.hasHeader(SATURATION_HEADER)) this.setHeader(SATURATION_HEADER, format(meter.read()));
      // Once draining, each connection closes after its response.
      if (state && state.draining) this.setHeader('Connection', 'close');
    }
    return writeHead.apply(this, arguments);
  };
}

// guardLength keeps a response within the Content-Length it declared. A
// handler that writes past it (a bug, or a write after a timer when the
// response was already whole) would put bytes on the kept-alive connection
// that the front reads as the next request's response: another client's.
// Node refuses such a write when strictContentLength is set, by throwing
// from write or end; here the refused write closes the connection instead
// (the front sees it close rather than read another's bytes) and is
// reported once per process as a warning.
function guardLength(res) {
  res.strictContentLength = true;
  for (const name of ['write', 'end']) {
    const original = res[name];
    res[name] = function sluiceGuardedWrite() {
      try {
        return original.apply(this, arguments);
      } catch (err) {
        if (!err || err.code !== 'ERR_HTTP_CONTENT_LENGTH_MISMATCH') throw err;
        warnLengthOnce(err);
        this.destroy();
        return false;
      }
    };
  }
}

let warnedLength = false;

function warnLengthOnce(err) {
  if (warnedLength) return;
  warnedLength = true;
  process.emitWarning(`${err.message}: the connection was closed rather than let the extra bytes reach the next request`, {
    code: 'SLUICE_CONTENT_LENGTH_MISMATCH',
  });
}

function isReadiness(req, readyPath) {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  const url = req.url;
  return url === readyPath || (url.startsWith(readyPath) && url[readyPath.length] === '?');
}

function answerReadiness(res, draining) {
  const body = draining ? 'draining\n' : 'ok\n';
  res.writeHead(draining ? 503 : 200, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
  });
  res.end(body); // Node sends no body to a HEAD request
}

module.exports = { createInstrument, processMeter, SATURATION_HEADER, DEFAULT_READY_PATH };
