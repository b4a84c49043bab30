'use strict';
// Sluice-Saturation on every response, however the handler writes it.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const sluice = require('..');
const { listening, request, close } = require('../testing/helpers');

const VALUE = /^[01]\.\d{3}$/;

function assertSaturation(headers, what) {
  const v = headers['sluice-saturation'];
  assert.match(v ?? '', VALUE, `${what}: Sluice-Saturation ${JSON.stringify(v)}, want 0.000..1.000`);
  assert.ok(Number(v) >= 0 && Number(v) <= 1, `${what}: ${v} out of [0, 1]`);
}

const routes = {
  '/writehead': (req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    res.end('explicit');
  },
  // No writeHead: Node writes the headers implicitly at end.
  '/end-only': (req, res) => res.end('implicit'),
  // Headers go out with the first chunk; the body follows in pieces.
  '/stream': (req, res) => {
    res.write('a');
    setImmediate(() => {
      res.write('b');
      setImmediate(() => res.end('c'));
    });
  },
  '/error': (req, res) => {
    res.statusCode = 500;
    res.end('failed');
  },
  '/own': (req, res) => {
    res.setHeader('Sluice-Saturation', '0.500');
    res.end('mine');
  },
  '/own-in-writehead': (req, res) => {
    res.writeHead(200, { 'sluice-saturation': '0.250' });
    res.end('mine');
  },
  '/raw-headers': (req, res) => {
    res.writeHead(200, ['Content-Type', 'text/plain', 'X-A', '1']);
    res.end('array form');
  },
};

function handler(req, res) {
  const route = routes[req.url];
  if (route) return route(req, res);
  res.statusCode = 404;
  return res.end('not found');
}

for (const [how, make] of [
  ['wrap', () => http.createServer(sluice.wrap(handler))],
  ['attach', () => sluice.attach(http.createServer(handler), { signals: false, log: false })],
]) {
  test(`Sluice-Saturation on every response (${how})`, async (t) => {
    const server = make();
    const port = await listening(server);
    t.after(() => close(server));

    const cases = [
      { path: '/writehead', status: 200, body: 'explicit' },
      { path: '/end-only', status: 200, body: 'implicit' },
      { path: '/stream', status: 200, body: 'abc' },
      { path: '/error', status: 500, body: 'failed' },
      { path: '/missing', status: 404, body: 'not found' },
      { path: '/raw-headers', status: 200, body: 'array form' },
    ];
    for (const c of cases) {
      await t.test(c.path, async () => {
        const r = await request(port, c.path);
        assert.equal(r.status, c.status);
        assert.equal(r.body, c.body);
        assertSaturation(r.headers, c.path);
      });
    }
    await t.test('streamed: sent with the headers, chunked', async () => {
      const r = await request(port, '/stream');
      assert.equal(r.headers['transfer-encoding'], 'chunked');
    });
    await t.test('a value the handler set is kept', async () => {
      assert.equal((await request(port, '/own')).headers['sluice-saturation'], '0.500');
      assert.equal((await request(port, '/own-in-writehead')).headers['sluice-saturation'], '0.250');
    });
  });
}

test('static headers option: on handler and helper responses, changeable', async (t) => {
  const server = http.createServer(sluice.wrap((req, res) => {
    if (req.url === '/change') res.setHeader('X-Worker-Pid', 'changed');
    res.end();
  }, { headers: { 'X-Worker-Pid': String(process.pid) } }));
  const port = await listening(server);
  t.after(() => close(server));
  assert.equal((await request(port, '/')).headers['x-worker-pid'], String(process.pid));
  assert.equal((await request(port, '/healthz')).headers['x-worker-pid'], String(process.pid));
  assert.equal((await request(port, '/change')).headers['x-worker-pid'], 'changed');
});
