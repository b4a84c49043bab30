'use strict';
// sluice-worker: what a Node.js HTTP worker does to sit behind sluice.
//
//   const sluice = require('sluice-worker');
//   sluice.serve(handler);                  // all of it, for any (req, res) handler
//
// or, keeping your own server:
//
//   const server = http.createServer(sluice.wrap(handler));
//   sluice.attach(server);
//   sluice.listen(server);
//
// Every response carries Sluice-Saturation, the event loop's utilization,
// from which sluice finds how many requests this worker can take at once.
// See README.md for the contract.

const http = require('node:http');
const { createMeter, DEFAULT_WINDOW_MS } = require('./lib/meter');
const { createInstrument, processMeter, SATURATION_HEADER, DEFAULT_READY_PATH } = require('./lib/instrument');
const { PRIORITIES } = require('./lib/request');
const { attach, drain, draining, stateOf, logOf, DEFAULT_DRAIN_TIMEOUT_MS } = require('./lib/server');
const { listen } = require('./lib/listen');

// wrap returns a (req, res) handler that answers readiness itself, sets
// req.sluice and stamps Sluice-Saturation on the response, and otherwise
// calls handler. Readiness turns 503 while the server is draining, if the
// server is attach()ed.
function wrap(handler, options = {}) {
  if (typeof handler !== 'function') throw new TypeError('sluice-worker: wrap: handler must be a function(req, res)');
  const instrument = createInstrument(options);
  return function sluiceHandler(req, res) {
    if (instrument(req, res, stateOf(req.socket && req.socket.server))) return undefined;
    return handler.call(this, req, res);
  };
}

// serve is http.createServer(handler) with attach() and listen(): the
// whole worker. It returns the server; a failure to listen is thrown, as an
// unhandled 'error' would be, unless the caller listens for 'error'.
function serve(handler, options = {}) {
  if (typeof handler !== 'function') throw new TypeError('sluice-worker: serve: handler must be a function(req, res)');
  const server = http.createServer(options.server ?? {}, handler);
  attach(server, options);
  const log = logOf(options);
  listen(server, options).then((address) => log(`listening on ${address}`), (err) => {
    if (server.listenerCount('error') === 0) throw err;
  });
  return server;
}

// saturation returns the process's event-loop utilization in [0, 1], as
// the next response will carry it (with the default window).
function saturation() {
  return processMeter().read();
}

module.exports = {
  serve,
  wrap,
  attach,
  listen,
  drain,
  draining,
  saturation,
  createMeter,
  SATURATION_HEADER,
  TIMEOUT_HEADER: 'Sluice-Timeout',
  PRIORITY_HEADER: 'Sluice-Priority',
  PRIORITIES: [...PRIORITIES],
  DEFAULT_READY_PATH,
  DEFAULT_WINDOW_MS,
  DEFAULT_DRAIN_TIMEOUT_MS,
};
