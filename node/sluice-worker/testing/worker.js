'use strict';
// A worker for the tests that need a process of its own: sluice.serve()
// with its defaults, as a user would write it, listening from PORT or
// SLUICE_SOCKET and draining on SIGTERM.
//
//   GET /held  says "entered /held" on stdout and answers only once the
//              process has been sent SIGTERM: a request in flight at the drain
//   GET /hang  never answers
//   otherwise  "hello"

const sluice = require('..');

sluice.serve((req, res) => {
  if (req.url === '/held') {
    process.once('SIGTERM', () => setImmediate(() => res.end('finished')));
    process.stdout.write('entered /held\n');
    return;
  }
  if (req.url === '/hang') {
    process.stdout.write('entered /hang\n');
    return;
  }
  res.end('hello');
}, {
  drainTimeoutMs: process.env.DRAIN_TIMEOUT_MS ? Number(process.env.DRAIN_TIMEOUT_MS) : undefined,
  log: (msg) => process.stdout.write(`${msg}\n`),
});
