'use strict';
// Where a worker listens: PORT or SLUICE_SOCKET, or what the caller says.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { once } = require('node:events');
const sluice = require('..');
const { target } = require('../lib/listen');
const { request, close } = require('../testing/helpers');

function socketDir(t) {
  // A unix socket path must fit in about 100 bytes: a short directory.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sw-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function hello(req, res) {
  res.end('hello');
}

test('target: options over the environment over the default', () => {
  const cases = [
    { name: 'nothing set', options: {}, env: {}, want: { host: '127.0.0.1', port: 3001 } },
    { name: 'PORT', options: {}, env: { PORT: '8123' }, want: { host: '127.0.0.1', port: 8123 } },
    { name: 'SLUICE_SOCKET over PORT', options: {}, env: { PORT: '8123', SLUICE_SOCKET: '/tmp/w.sock' }, want: { path: '/tmp/w.sock' } },
    { name: 'empty SLUICE_SOCKET is unset', options: {}, env: { PORT: '8123', SLUICE_SOCKET: '' }, want: { host: '127.0.0.1', port: 8123 } },
    { name: 'port option over env', options: { port: 9000 }, env: { SLUICE_SOCKET: '/tmp/w.sock' }, want: { host: '127.0.0.1', port: 9000 } },
    { name: 'socket option over env', options: { socket: '/tmp/o.sock' }, env: { PORT: '8123' }, want: { path: '/tmp/o.sock' } },
    { name: 'host option', options: { host: '::1' }, env: { PORT: '8123' }, want: { host: '::1', port: 8123 } },
  ];
  for (const c of cases) assert.deepEqual(target(c.options, c.env), c.want, c.name);
  for (const bad of ['http', '-1', '70000', '80.5']) {
    assert.throws(() => target({}, { PORT: bad }), RangeError, `PORT=${bad}`);
  }
});

test('listen on 127.0.0.1:PORT', async (t) => {
  const server = http.createServer(sluice.wrap(hello));
  const address = await sluice.listen(server, { env: { PORT: '0' } });
  t.after(() => close(server));
  const { port } = server.address();
  assert.equal(address, `127.0.0.1:${port}`);
  assert.equal((await request(port, '/')).body, 'hello');
});

test('listen on SLUICE_SOCKET, replacing a stale socket file', async (t) => {
  const dir = socketDir(t);
  const socketPath = path.join(dir, 'w.sock');

  // A stale socket: a second name of a socket whose server has gone.
  const gone = net.createServer();
  gone.listen(path.join(dir, 'gone.sock'));
  await once(gone, 'listening');
  fs.linkSync(path.join(dir, 'gone.sock'), socketPath);
  await new Promise((resolve) => gone.close(resolve));
  assert.ok(fs.statSync(socketPath).isSocket());

  const server = http.createServer(sluice.wrap(hello));
  const address = await sluice.listen(server, { env: { SLUICE_SOCKET: socketPath, PORT: '0' } });
  t.after(() => close(server));
  assert.equal(address, socketPath);
  const r = await request(undefined, '/', { socketPath });
  assert.equal(r.body, 'hello');
  assert.match(r.headers['sluice-saturation'], /^[01]\.\d{3}$/);
});

test('a file that is not a socket is left alone, and listen rejects', async (t) => {
  const file = path.join(socketDir(t), 'not-a-socket');
  fs.writeFileSync(file, 'keep me');
  await assert.rejects(sluice.listen(http.createServer(hello), { env: { SLUICE_SOCKET: file } }), { code: 'EADDRINUSE' });
  assert.equal(fs.readFileSync(file, 'utf8'), 'keep me');
});

test('listen rejects when the port is taken', async (t) => {
  const first = http.createServer(hello);
  await sluice.listen(first, { port: 0 });
  t.after(() => close(first));
  const { port } = first.address();
  await assert.rejects(sluice.listen(http.createServer(hello), { env: { PORT: String(port) } }), { code: 'EADDRINUSE' });
});

test('serve: the whole worker from the environment', async (t) => {
  const lines = [];
  const server = sluice.serve(hello, { env: { PORT: '0' }, signals: false, log: (m) => lines.push(m) });
  await once(server, 'listening');
  t.after(() => close(server));
  const { port } = server.address();
  const r = await request(port, '/');
  assert.equal(r.body, 'hello');
  assert.match(r.headers['sluice-saturation'], /^[01]\.\d{3}$/);
  assert.equal((await request(port, '/healthz')).body, 'ok\n');
  // The log line comes once listen's promise has settled.
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(lines, [`listening on 127.0.0.1:${port}`]);
});
