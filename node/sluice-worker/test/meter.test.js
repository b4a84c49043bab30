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
