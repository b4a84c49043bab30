'use strict';
// The saturation meter: the event loop's utilization (ELU) over the most
// recent interval of at least windowMs, computed when asked, never on a
// timer. sluice's front reads it from every response and runs AIMD on it to
// find how many requests this worker can take at once.

const { performance } = require('node:perf_hooks');

const DEFAULT_WINDOW_MS = 100;

// createMeter returns a meter whose read() is the loop's utilization in
// [0, 1]. Each read costs one eventLoopUtilization() call and a division.
// A read also closes an interval that has reached windowMs, which is why
// wrap() and attach() read the meter when a request arrives as well as
// when its response is written: otherwise the interval a response reads
// after an idle stretch spans the whole stretch (see instrument.js).
//
// The interval is measured on ELU's own clock (idle + active is the time
// since the loop started), so the meter needs no second clock, and a test
// can drive it with a fake eventLoopUtilization returning {idle, active}.
function createMeter(options = {}) {
  const windowMs = options.windowMs ?? DEFAULT_WINDOW_MS;
  if (!(Number.isFinite(windowMs) && windowMs >= 0)) {
    throw new RangeError(`sluice-worker: windowMs must be a number >= 0, got ${windowMs}`);
  }
  const elu = options.eventLoopUtilization ?? performance.eventLoopUtilization;

  // Before the loop starts, eventLoopUtilization() is all zeros: a meter
  // made while the main script runs then measures from the loop's start.
  let snapshot = elu();
  let latest; // the last full interval's utilization; undefined before one

  function read() {
    const current = elu();
    const idle = current.idle - snapshot.idle;
    const active = current.active - snapshot.active;
    if (idle + active >= windowMs) {
      // The same as eventLoopUtilization(current, snapshot).utilization.
      latest = utilization(idle, active);
      snapshot = current;
      return latest;
    }
    // Within the window keep the last full interval's value, so that a
    // burst of responses all report the same recent past; before the first
    // one, the utilization since the meter started.
    return latest ?? utilization(idle, active);
  }

  return { read, windowMs };
}

function utilization(idle, active) {
  const u = active / (idle + active);
  if (!(u > 0)) return 0; // NaN for an empty interval
  return u > 1 ? 1 : u;
}

// format is the header value: three decimals, as sluice parses it.
function format(u) {
  return u.toFixed(3);
}

module.exports = { createMeter, format, DEFAULT_WINDOW_MS };
