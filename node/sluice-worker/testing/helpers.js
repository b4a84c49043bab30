'use strict';
// Helpers for the tests in ../test. They live outside test/ because
// `node --test` runs every .js file under a test/ directory.

const http = require('node:http');
const { once } = require('node:events');

// deferred is a promise with its resolve at hand: a test step that waits
// for something a handler does.
function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

// listening starts server on 127.0.0.1 at a free port and returns the port.
async function listening(server) {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server.address().port;
}

// request sends one request and reads the whole answer:
// {status, headers, body}. options: method, headers, agent, socketPath.
function request(port, path, options = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port,
      path,
      method: options.method ?? 'GET',
      headers: options.headers,
      agent: options.agent ?? false,
      socketPath: options.socketPath,
      timeout: 10_000,
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`request ${path}: no answer within 10 s`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

// close shuts a test's server down whatever state its connections are in.
function close(server) {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

// spin keeps the event loop busy for ms: a synchronous render.
function spin(ms) {
  const end = performance.now() + ms;
  while (performance.now() < end) { /* busy */ }
}

module.exports = { deferred, listening, request, close, spin };
