'use strict';
// req.sluice: what sluice says about a request, from its headers.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { once } = require('node:events');
const sluice = require('..');
const { requestInfo } = require('../lib/request');
const { deferred, listening, request, close } = require('../testing/helpers');

const NOW = 1_700_000_000_000;

test('requestInfo parses Sluice-Timeout and Sluice-Priority', () => {
  const cases = [
    { name: 'both valid', headers: { 'sluice-timeout': '250', 'sluice-priority': 'critical-plus' }, timeoutMs: 250, priority: 'critical-plus' },
    { name: 'zero budget', headers: { 'sluice-timeout': '0' }, timeoutMs: 0 },
    { name: 'missing', headers: {} },
    { name: 'every priority', headers: { 'sluice-priority': 'sheddable-plus' }, priority: 'sheddable-plus' },
    { name: 'priority in capitals', headers: { 'sluice-priority': 'Critical' }, priority: 'critical' },
    { name: 'unknown priority', headers: { 'sluice-priority': 'urgent' } },
    { name: 'empty priority', headers: { 'sluice-priority': '' } },
    { name: 'not a number', headers: { 'sluice-timeout': 'soon' } },
    { name: 'negative', headers: { 'sluice-timeout': '-5' } },
    { name: 'fraction', headers: { 'sluice-timeout': '1.5' } },
    { name: 'exponent', headers: { 'sluice-timeout': '1e3' } },
    { name: 'unit', headers: { 'sluice-timeout': '250ms' } },
    { name: 'empty', headers: { 'sluice-timeout': '' } },
    { name: 'too many digits', headers: { 'sluice-timeout': '9'.repeat(40) } },
    { name: 'repeated header (array)', headers: { 'sluice-timeout': ['1', '2'] } },
  ];
  for (const c of cases) {
    const info = requestInfo(c.headers, NOW);
    assert.equal(info.timeoutMs, c.timeoutMs, `${c.name}: timeoutMs`);
    assert.equal(info.deadline, c.timeoutMs === undefined ? undefined : NOW + c.timeoutMs, `${c.name}: deadline`);
    assert.equal(info.priority, c.priority, `${c.name}: priority`);
  }
});

test('signal is made only when read', () => {
  const info = requestInfo({ 'sluice-timeout': '1000' }, Date.now());
  assert.equal(typeof Object.getOwnPropertyDescriptor(info, 'signal').get, 'function');
  assert.equal(info.signal, info.signal, 'the same signal on every read');
  assert.equal(info.signal.aborted, false);
});

test('signal aborts at the deadline', { timeout: 5_000 }, async () => {
  const start = Date.now();
  const { signal } = requestInfo({ 'sluice-timeout': '50' }, start);
  await once(signal, 'abort');
  assert.ok(Date.now() - start >= 45, `aborted after ${Date.now() - start} ms, want about 50`);
  assert.equal(signal.reason.name, 'TimeoutError');
});

test('signal of a deadline already past aborts at once', { timeout: 5_000 }, async () => {
  const { signal } = requestInfo({ 'sluice-timeout': '10' }, Date.now() - 1000);
  if (!signal.aborted) await once(signal, 'abort');
  assert.equal(signal.reason.name, 'TimeoutError');
});

test('the handler sees req.sluice', async (t) => {
  let seen;
  const server = http.createServer(sluice.wrap((req, res) => {
    seen = { timeoutMs: req.sluice.timeoutMs, deadline: req.sluice.deadline, priority: req.sluice.priority };
    res.end();
  }));
  const port = await listening(server);
  t.after(() => close(server));

  const before = Date.now();
  await request(port, '/', { headers: { 'Sluice-Timeout': '1500', 'Sluice-Priority': 'sheddable' } });
  assert.equal(seen.timeoutMs, 1500);
  assert.equal(seen.priority, 'sheddable');
  assert.ok(seen.deadline >= before + 1500 && seen.deadline <= Date.now() + 1500, `deadline ${seen.deadline} not now + 1500`);

  await request(port, '/', { headers: { 'Sluice-Timeout': 'later', 'Sluice-Priority': 'top' } });
  assert.deepEqual(seen, { timeoutMs: undefined, deadline: undefined, priority: undefined });
});

test('signal aborts when the client goes away mid-request', { timeout: 5_000 }, async (t) => {
  const aborted = deferred();
  const entered = deferred();
  const server = http.createServer(sluice.wrap((req) => {
    req.sluice.signal.addEventListener('abort', () => aborted.resolve(req.sluice.signal.reason));
    entered.resolve();
    // never answers
  }));
  const port = await listening(server);
  t.after(() => close(server));

  const req = http.get({ host: '127.0.0.1', port, path: '/', agent: false });
  req.on('error', () => {}); // the abort below
  await entered.promise;
  req.destroy();
  const reason = await aborted.promise;
  assert.equal(reason.name, 'AbortError');
});
