'use strict';
// The worker as sluice runs it: its own process, told where to listen by
// the environment, stopped with SIGTERM.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');
const { spawn } = require('node:child_process');
const http = require('node:http');
const { once } = require('node:events');
const { request } = require('../testing/helpers');

const WORKER = path.join(__dirname, '..', 'testing', 'worker.js');

// startWorker runs testing/worker.js with env and returns it with
// line(re), which resolves with the first stdout line matching re from
// now on, and exited, which resolves with the exit code.
function startWorker(t, env) {
  const child = spawn(process.execPath, [WORKER], {
    env: { ...process.env, PORT: '', SLUICE_SOCKET: '', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const exited = once(child, 'exit').then(([code]) => code);
  const waiters = [];
  readline.createInterface({ input: child.stdout }).on('line', (l) => {
    for (const w of waiters.splice(0)) {
      const m = l.match(w.re);
      if (m) w.resolve(m);
      else waiters.push(w);
    }
  });
  return {
    child,
    exited,
    line: (re) => new Promise((resolve) => waiters.push({ re, resolve })),
  };
}

test('SIGTERM: the request in flight completes, then exit 0', { timeout: 20_000 }, async (t) => {
  const w = startWorker(t, { PORT: '0' });
  const [, port] = await w.line(/^listening on 127\.0\.0\.1:(\d+)$/);
  assert.equal((await request(port, '/healthz')).status, 200);

  const entered = w.line(/^entered \/held$/);
  // A keep-alive client: Connection: close is the worker's doing.
  const agent = new http.Agent({ keepAlive: true });
  t.after(() => agent.destroy());
  const inflight = request(port, '/held', { agent });
  await entered;
  w.child.kill('SIGTERM');

  const r = await inflight;
  assert.equal(r.status, 200);
  assert.equal(r.body, 'finished');
  assert.equal(r.headers.connection, 'close');
  assert.match(r.headers['sluice-saturation'], /^[01]\.\d{3}$/);
  assert.equal(await w.exited, 0);
});

test('SIGTERM with a request that never ends: exit 1 after drainTimeoutMs', { timeout: 20_000 }, async (t) => {
  const w = startWorker(t, { PORT: '0', DRAIN_TIMEOUT_MS: '200' });
  const [, port] = await w.line(/^listening on 127\.0\.0\.1:(\d+)$/);
  const entered = w.line(/^entered \/hang$/);
  const hung = request(port, '/hang').catch((err) => err);
  await entered;
  w.child.kill('SIGTERM');
  assert.equal(await w.exited, 1);
  assert.equal((await hung).code, 'ECONNRESET');
});

test('SLUICE_SOCKET: a worker on a unix socket, stopped idle, exits 0', { timeout: 20_000 }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sw-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const socketPath = path.join(dir, 'w.sock');
  const w = startWorker(t, { SLUICE_SOCKET: socketPath, PORT: '1' });
  await w.line(new RegExp(`^listening on ${socketPath.replace(/[.]/g, '\\.')}$`));
  const r = await request(undefined, '/', { socketPath });
  assert.equal(r.body, 'hello');
  w.child.kill('SIGTERM');
  assert.equal(await w.exited, 0);
});
