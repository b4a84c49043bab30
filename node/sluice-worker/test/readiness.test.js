'use strict';
// Readiness is answered by the helper, never by the application.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { once } = require('node:events');
const sluice = require('..');
const { deferred, listening, request, close } = require('../testing/helpers');

for (const [how, make] of [
  ['wrap', (handler, opts) => http.createServer(sluice.wrap(handler, opts))],
  ['attach', (handler, opts) => sluice.attach(http.createServer(handler), { ...opts, signals: false, log: false })],
]) {
  test(`readiness is answered without the handler (${how})`, async (t) => {
    let calls = 0;
    const server = make((req, res) => {
      calls++;
      res.end('app');
    });
    const port = await listening(server);
    t.after(() => close(server));

    for (const path of ['/healthz', '/healthz?probe=1']) {
      const r = await request(port, path);
      assert.equal(r.status, 200, path);
      assert.equal(r.body, 'ok\n', path);
      assert.match(r.headers['sluice-saturation'], /^[01]\.\d{3}$/, path);
    }
    const head = await request(port, '/healthz', { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.body, '');
    assert.equal(calls, 0, 'the handler was called for readiness');

    // Other methods, and paths that only begin alike, are the handler's.
    for (const [method, path] of [['POST', '/healthz'], ['GET', '/healthzz'], ['GET', '/healthz/x']]) {
      assert.equal((await request(port, path, { method })).body, 'app', `${method} ${path}`);
    }
    assert.equal(calls, 3);
  });

  test(`readyPath is an option; false leaves it to the handler (${how})`, async (t) => {
    const custom = make((req, res) => res.end('app'), { readyPath: '/ready' });
    const none = make((req, res) => res.end('app'), { readyPath: false });
    const [a, b] = [await listening(custom), await listening(none)];
    t.after(() => Promise.all([close(custom), close(none)]));
    assert.equal((await request(a, '/ready')).body, 'ok\n');
    assert.equal((await request(a, '/healthz')).body, 'app');
    assert.equal((await request(b, '/healthz')).body, 'app');
  });
}

test('readyPath is checked', () => {
  assert.throws(() => sluice.wrap(() => {}, { readyPath: 'healthz' }), TypeError);
});

// The only readiness request a draining worker can still get comes on a
// connection that is busy with a response begun before the drain (idle
// connections are closed, new ones refused): it is pipelined behind it.
test('readiness answers 503 while draining', { timeout: 10_000 }, async (t) => {
  const streaming = deferred();
  const barrier = deferred();
  let finishStream;
  const server = sluice.attach(http.createServer((req, res) => {
    if (req.url === '/stream') {
      res.write('first');
      finishStream = () => res.end('last');
      streaming.resolve();
    } else if (req.url === '/barrier') {
      barrier.resolve();
      res.end();
    }
  }), { signals: false, log: false });
  const port = await listening(server);
  t.after(() => close(server));

  const sock = net.connect(port, '127.0.0.1');
  await once(sock, 'connect');
  let received = '';
  sock.setEncoding('latin1');
  sock.on('data', (d) => { received += d; });
  const ended = once(sock, 'close');

  sock.write('GET /stream HTTP/1.1\r\nHost: w\r\n\r\n');
  await streaming.promise;
  const drained = sluice.drain(server);
  // Parsed in order: when the handler sees /barrier, readiness is answered.
  sock.write('GET /healthz HTTP/1.1\r\nHost: w\r\n\r\nGET /barrier HTTP/1.1\r\nHost: w\r\n\r\n');
  await barrier.promise;
  finishStream();
  await ended;
  await drained;

  const answers = received.split(/(?=HTTP\/1\.1 )/);
  assert.match(answers[0], /^HTTP\/1\.1 200 /);
  assert.match(answers[1] ?? '', /^HTTP\/1\.1 503 /, `second answer: ${JSON.stringify(answers[1])}`);
  assert.match(answers[1], /\r\nConnection: close\r\n/i);
  assert.match(answers[1], /\r\n\r\ndraining\n$/);
});
