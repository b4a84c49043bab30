'use strict';
// attach() and drain(): what a worker does as a whole server, beside what
// it does per request. sluice stops a worker with SIGTERM and expects it to
// finish what it has, close its connections and exit 0.

const { createInstrument } = require('./instrument');

const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;
const DEFAULT_SIGNALS = ['SIGTERM', 'SIGINT'];

// Longer than sluice's idle timeout towards workers (4 s), so that sluice,
// not the worker, closes an idle keep-alive connection and never sends a
// request on one the worker has just closed. Node's default is 5 s.
const MIN_KEEP_ALIVE_TIMEOUT_MS = 65_000;

// states holds each attached server's state, for drain() and for wrap()ped
// handlers, which know only the request (req.socket.server).
const states = new WeakMap();

function stateOf(server) {
  return server ? states.get(server) : undefined;
}

function defaultLog(msg) {
  process.stderr.write(`sluice-worker[${process.pid}]: ${msg}\n`);
}

function logOf(options) {
  if (options.log === false || options.log === null) return () => {};
  if (options.log === undefined) return defaultLog;
  if (typeof options.log !== 'function') throw new TypeError('sluice-worker: log must be a function(message) or false');
  return options.log;
}

function drainTimeoutOf(options) {
  const ms = options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
  if (!(Number.isFinite(ms) && ms >= 0)) {
    throw new RangeError(`sluice-worker: drainTimeoutMs must be a number >= 0, got ${ms}`);
  }
  return ms;
}

// attach gives an http.Server readiness at options.readyPath, the
// per-request work of wrap() for every request, and a drain on SIGTERM and
// SIGINT (options.signals) that ends with process.exit (options.exit).
// It returns the server.
function attach(server, options = {}) {
  if (states.has(server)) throw new Error('sluice-worker: attach: this server is already attached');
  const signals = options.signals === undefined ? DEFAULT_SIGNALS : (options.signals || []);
  const state = {
    server,
    draining: false,
    drained: undefined, // drain()'s promise, once asked
    drainTimeoutMs: drainTimeoutOf(options),
    log: logOf(options),
    // A response that finishes while draining leaves its connection idle:
    // close it now rather than at the keep-alive timeout. Responses begun
    // after the drain close theirs themselves (Connection: close).
    onFinish() {
      if (state.draining) server.closeIdleConnections();
    },
  };
  const instrument = createInstrument(options);
  states.set(server, state);

  // A 'request' listener cannot stop the others, and readiness must not
  // reach the application's handler; so the event is met at emit. This
  // also covers listeners added after attach().
  const emit = server.emit;
  server.emit = function sluiceEmit(event, req, res) {
    if (event === 'request' && instrument(req, res, state)) return true;
    return emit.apply(this, arguments);
  };

  if (server.keepAliveTimeout < MIN_KEEP_ALIVE_TIMEOUT_MS) server.keepAliveTimeout = MIN_KEEP_ALIVE_TIMEOUT_MS;

  const exit = options.exit ?? true;
  for (const signal of signals) {
    process.on(signal, () => onSignal(state, signal, exit));
  }
  return server;
}

function onSignal(state, signal, exit) {
  if (state.drained) return; // a second signal changes nothing
  state.log(`${signal}: draining`);
  startDrain(state).then(() => {
    state.log('drained');
    if (exit) process.exit(0);
  }, (err) => {
    state.log(err.message);
    if (exit) process.exit(1);
  });
}

// drain stops the server taking connections, closes its idle ones, and
// resolves once the requests in flight have been answered and every
// connection has closed. After drainTimeoutMs it closes the connections
// still open and rejects. It is idempotent: every call returns the same
// promise.
function drain(server) {
  const state = states.get(server);
  if (!state) throw new Error('sluice-worker: drain: the server is not attached (see attach)');
  return startDrain(state);
}

function startDrain(state) {
  if (state.drained) return state.drained;
  state.draining = true;
  const { server } = state;
  state.drained = new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`sluice-worker: requests still running after ${state.drainTimeoutMs} ms; closing their connections`));
      server.closeAllConnections();
    }, state.drainTimeoutMs);
    // The timer bounds the drain; it is no reason to stay alive.
    timer.unref();
    server.close((err) => {
      clearTimeout(timer);
      // A server that never listened has nothing to drain.
      if (err && err.code !== 'ERR_SERVER_NOT_RUNNING') reject(err);
      else resolve();
    });
    // Node 19 and later do this in close() too; said here, it is the
    // contract rather than a version's detail.
    server.closeIdleConnections();
  });
  return state.drained;
}

// draining reports whether drain has begun on an attached server.
function draining(server) {
  const state = states.get(server);
  return Boolean(state && state.draining);
}

module.exports = {
  attach, drain, draining, stateOf, logOf,
  DEFAULT_DRAIN_TIMEOUT_MS, MIN_KEEP_ALIVE_TIMEOUT_MS,
};
