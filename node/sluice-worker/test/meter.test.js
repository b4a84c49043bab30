'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { setTimeout: delay } = require('node:timers/promises');
const sluice = require('..');
const { createMeter, format } = require('../lib/meter');
const { listening, request, close, spin } = require('../testing/helpers');

// fakeLoop is an eventLoopUtilization that a test advances by hand.
function fakeLoop() {
  const loop = { idle: 0, active: 0 };
  return {
    elu: () => ({ idle: loop.idle, active: loop.active }),
    busy(ms) { loop.active += ms; },
    idle(ms) { loop.idle += ms; },
  };
}

test('meter: the window rule, with a fake loop', () => {
  const loop = fakeLoop();
  const m = createMeter({ windowMs: 100, eventLoopUtilization: loop.elu });
  assert.equal(m.read(), 0, 'an empty interval reads 0, not NaN');

  loop.busy(30);
  loop.idle(10);
  assert.equal(m.read(), 0.75, 'before the first full window: the utilization since the start');

  loop.busy(60); // 100 ms since the start, 90 of them busy
  assert.equal(m.read(), 0.9, 'a full window: its utilization');

  loop.idle(50);
  assert.equal(m.read(), 0.9, 'within the next window: the last full one, not the idle half');

  loop.idle(50); // 100 ms idle since the last snapshot
  assert.equal(m.read(), 0, 'the next full window');

  loop.busy(1000);
  assert.equal(m.read(), 1, 'a window longer than windowMs counts whole');
});

test('meter: windowMs is checked', () => {
  assert.throws(() => createMeter({ windowMs: -1 }), RangeError);
  assert.throws(() => createMeter({ windowMs: Number.NaN }), RangeError);
});

test('meter: the header value has three decimals', () => {
  assert.equal(format(0), '0.000');
  assert.equal(format(1), '1.000');
  assert.equal(format(0.73449), '0.734');
  assert.equal(format(0.7345), '0.735');
});

test('saturation() is the process meter\'s value, in [0, 1]', () => {
  const u = sluice.saturation();
  assert.ok(u >= 0 && u <= 1, `got ${u}, want a value in [0, 1]`);
});

// The real loop. Client and server share this process, so a request costs
// a few ms of the loop; the bounds leave room for a shared machine.
test('meter: a busy loop reads high, an idle one low', { timeout: 20_000 }, async (t) => {
  const meter = createMeter({ windowMs: 100 });
  const server = http.createServer(sluice.wrap((req, res) => {
    if (req.url === '/spin') spin(200);
    res.end('done');
  }, { meter }));
  const port = await listening(server);
  t.after(() => close(server));

  // The waiting is what is measured here, not a synchronisation.
  await delay(300);
  const idle = Number((await request(port, '/')).headers['sluice-saturation']);
  assert.ok(idle < 0.5, `after 300 ms idle: got ${idle}, want < 0.5`);

  const busy = Number((await request(port, '/spin')).headers['sluice-saturation']);
  assert.ok(busy > 0.75, `the response of a 200 ms synchronous render: got ${busy}, want > 0.75`);
  const after = Number((await request(port, '/')).headers['sluice-saturation']);
  assert.ok(after > 0.75, `the request after it, within the window: got ${after}, want > 0.75`);
});

// A worker's first request, or the first after a pause in traffic: the
// meter was last read seconds ago. The response of a 150 ms synchronous
// render must read that render (1), not the render diluted in the idle
// stretch before it (150 / 3150 = 0.048), or the front raises the limit of
// a worker that is already saturated. A real server, on a fake loop that
// the handler advances, so the numbers are exact.
for (const [how, make] of [
  ['wrap', (handler, meter) => http.createServer(sluice.wrap(handler, { meter }))],
  ['attach', (handler, meter) => sluice.attach(http.createServer(handler), { meter, signals: false, log: false })],
]) {
  test(`meter: the first response after an idle stretch reads its own render, with a fake loop (${how})`, async (t) => {
    const loop = fakeLoop();
    const meter = createMeter({ windowMs: 100, eventLoopUtilization: loop.elu });
    const server = make((req, res) => {
      loop.busy(Number(new URL(req.url, 'http://worker').searchParams.get('busy')));
      res.end('done');
    }, meter);
    const port = await listening(server);
    t.after(() => close(server));

    loop.idle(3000);
    const first = (await request(port, '/?busy=150')).headers['sluice-saturation'];
    assert.equal(first, '1.000', 'a 150 ms render after 3 s idle');

    loop.idle(10);
    const next = (await request(port, '/?busy=0')).headers['sluice-saturation'];
    assert.equal(next, '1.000', 'the next request, within the window: the render\'s window still');

    loop.idle(5000);
    const again = (await request(port, '/?busy=150')).headers['sluice-saturation'];
    assert.equal(again, '1.000', 'a 150 ms render after a 5 s pause in traffic');
  });
}

// The same on the real loop. The waiting is the idle stretch being
// measured, not a synchronisation.
test('meter: the first response after an idle stretch reads its own render, on the real loop', { timeout: 20_000 }, async (t) => {
  const meter = createMeter({ windowMs: 100 });
  const server = http.createServer(sluice.wrap((req, res) => {
    spin(200);
    res.end('done');
  }, { meter }));
  const port = await listening(server);
  t.after(() => close(server));

  await delay(500);
  const busy = Number((await request(port, '/')).headers['sluice-saturation']);
  assert.ok(busy > 0.75, `a 200 ms synchronous render after 500 ms idle: got ${busy}, want > 0.75`);
});
