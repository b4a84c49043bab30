'use strict';
// drain(): stop taking connections, finish what is in flight, close the
// connections, resolve.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { once } = require('node:events');
const sluice = require('..');
const { deferred, listening, request, close } = require('../testing/helpers');

// heldServer is an attached server whose /held requests wait until the
// test releases them; entered resolves as each one reaches the handler.
async function heldServer(t, options = {}) {
  const held = [];
  let entered = deferred();
  const server = sluice.attach(http.createServer((req, res) => {
    if (req.url === '/held') {
      held.push(() => res.end('finished'));
      entered.resolve();
      return;
    }
    if (req.url === '/streamed') {
      res.write('begun ');
      held.push(() => res.end('finished'));
      entered.resolve();
      return;
    }
    res.end('quick');
  }), { signals: false, log: false, ...options });
  const port = await listening(server);
  t.after(() => close(server));
  return {
    server,
    port,
    async nextEntered() {
      await entered.promise;
      entered = deferred();
    },
    release: () => held.shift()(),
  };
}

test('a request in flight completes after the drain starts; new connections are refused', { timeout: 10_000 }, async (t) => {
  const w = await heldServer(t);
  // A keep-alive client: Connection: close is the server's doing.
  const agent = new http.Agent({ keepAlive: true });
  t.after(() => agent.destroy());
  const inflight = request(w.port, '/held', { agent });
  await w.nextEntered();

  let done = false;
  const drained = sluice.drain(w.server).then(() => { done = true; });
  assert.equal(sluice.draining(w.server), true);
  await assert.rejects(request(w.port, '/'), { code: 'ECONNREFUSED' });
  assert.equal(done, false, 'drain resolved with a request in flight');

  w.release();
  const r = await inflight;
  assert.equal(r.status, 200);
  assert.equal(r.body, 'finished');
  assert.equal(r.headers.connection, 'close', 'a response written while draining closes its connection');
  await drained;
});

test('idle keep-alive connections close at once', { timeout: 10_000 }, async (t) => {
  const w = await heldServer(t);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());
  const r = await request(w.port, '/', { agent });
  assert.equal(r.headers.connection, 'keep-alive');
  const [idle] = agent.freeSockets[Object.keys(agent.freeSockets)[0]];
  // The agent unrefs its idle sockets; this one must keep the test alive.
  idle.ref();
  const closed = once(idle, 'close');

  await sluice.drain(w.server); // would wait out the 65 s keep-alive otherwise
  await closed;
});

// A response whose headers went out before the drain cannot say
// Connection: close; its connection is closed once it has finished.
test('a response begun before the drain has its connection closed after it', { timeout: 10_000 }, async (t) => {
  const w = await heldServer(t);
  const sock = net.connect(w.port, '127.0.0.1');
  let received = '';
  sock.setEncoding('latin1');
  sock.on('data', (d) => { received += d; });
  const closed = once(sock, 'close');
  sock.write('GET /streamed HTTP/1.1\r\nHost: w\r\n\r\n');
  await w.nextEntered();

  const drained = sluice.drain(w.server);
  w.release();
  await closed;
  await drained;
  assert.match(received, /^HTTP\/1\.1 200 /);
  assert.match(received, /\r\nConnection: keep-alive\r\n/, 'its headers were sent before the drain');
  assert.match(received, /finished\r\n0\r\n\r\n$/, 'the whole body arrived');
});

test('drain is idempotent', { timeout: 10_000 }, async (t) => {
  const w = await heldServer(t);
  const a = sluice.drain(w.server);
  assert.equal(sluice.drain(w.server), a);
  await a;
});

test('drain gives up after drainTimeoutMs and closes what is left', { timeout: 10_000 }, async (t) => {
  const w = await heldServer(t, { drainTimeoutMs: 100 });
  const inflight = request(w.port, '/held');
  await w.nextEntered();
  await assert.rejects(sluice.drain(w.server), /still running after 100 ms/);
  await assert.rejects(inflight, { code: 'ECONNRESET' });
});

test('a server that never listened drains at once', async () => {
  const server = sluice.attach(http.createServer(() => {}), { signals: false, log: false });
  await sluice.drain(server);
});

test('attach: misuse is an error, the keep-alive timeout outlasts sluice\'s', () => {
  const server = sluice.attach(http.createServer(() => {}), { signals: false, log: false });
  assert.ok(server.keepAliveTimeout >= 65_000, `keepAliveTimeout ${server.keepAliveTimeout}`);
  assert.throws(() => sluice.attach(server, { signals: false }), /already attached/);
  assert.throws(() => sluice.drain(http.createServer()), /not attached/);
  assert.throws(() => sluice.attach(http.createServer(), { drainTimeoutMs: -1 }), RangeError);
  assert.equal(sluice.draining(http.createServer()), false);
});
