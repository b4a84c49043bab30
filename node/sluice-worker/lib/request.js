'use strict';
// What sluice tells a worker about each request, from its request headers:
//
//   Sluice-Timeout: <ms>      the request's remaining budget when dispatched
//   Sluice-Priority: <name>   critical-plus, critical, sheddable-plus, sheddable
//
// A malformed value is treated as absent: a worker must never fail a
// request over a header that only advises it.

const PRIORITIES = new Set(['critical-plus', 'critical', 'sheddable-plus', 'sheddable']);

// setTimeout fires at once for delays beyond a signed 32-bit integer
// (about 24.8 days), so longer deadlines are capped there.
const MAX_TIMER_MS = 2 ** 31 - 1;

function parseTimeout(value) {
  if (typeof value !== 'string' || !/^\d{1,15}$/.test(value)) return undefined;
  return Number(value);
}

function parsePriority(value) {
  if (typeof value !== 'string') return undefined;
  const p = value.trim().toLowerCase();
  return PRIORITIES.has(p) ? p : undefined;
}

// requestInfo is req.sluice: {timeoutMs, deadline, priority, signal}.
// now is Date.now() when the request arrived. res, when given, bounds the
// signal's timer by the response's life and aborts the signal if the
// connection closes before the response is complete: sluice has given up.
//
// signal is a getter: the AbortController, its timer and its listener are
// made only for a handler that reads it.
function requestInfo(headers, now, res) {
  const timeoutMs = parseTimeout(headers['sluice-timeout']);
  const deadline = timeoutMs === undefined ? undefined : now + timeoutMs;
  let signal;
  return {
    timeoutMs,
    deadline,
    priority: parsePriority(headers['sluice-priority']),
    get signal() {
      if (!signal) signal = deadlineSignal(deadline, res);
      return signal;
    },
  };
}

function deadlineSignal(deadline, res) {
  const ac = new AbortController();
  let timer;
  if (deadline !== undefined) {
    const delay = Math.min(Math.max(deadline - Date.now(), 0), MAX_TIMER_MS);
    timer = setTimeout(() => {
      ac.abort(new DOMException('sluice-worker: the request\'s deadline has passed', 'TimeoutError'));
    }, delay);
  }
  if (res) {
    // The response's end clears the timer: a finished request's deadline
    // must not keep a draining process alive.
    res.once('close', () => {
      clearTimeout(timer);
      if (!res.writableFinished && !ac.signal.aborted) {
        ac.abort(new DOMException('sluice-worker: the connection closed before the response was complete', 'AbortError'));
      }
    });
  }
  return ac.signal;
}

module.exports = { requestInfo, parseTimeout, parsePriority, PRIORITIES };
