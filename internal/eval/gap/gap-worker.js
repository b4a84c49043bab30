// gap-worker.js: a single-threaded worker that spins SPIN_MS of CPU per request
// and records the idle gap between one response and the next request
// (internal/eval/gap/gap.sh reads it at GET /gap).
const http = require('http');
const spinMs = +(process.env.SPIN_MS || 10);
let lastEnd = 0n, gaps = [], n = 0, busyNs = 0n, t0 = process.hrtime.bigint();
const page = 'x'.repeat(+(process.env.BYTES || 80000));
http.createServer((req, res) => {
  if (req.url === '/gap') {
    const g = gaps.slice().sort((a, b) => a - b);
    const q = p => g.length ? g[Math.min(g.length - 1, Math.floor(p * g.length))] : 0;
    const mean = g.length ? g.reduce((a, b) => a + b, 0) / g.length : 0;
    const wall = Number(process.hrtime.bigint() - t0) / 1e6;
    res.end(JSON.stringify({ n, gaps: g.length, meanUs: Math.round(mean), p50Us: q(0.5), p90Us: q(0.9), p99Us: q(0.99), busy: Number(busyNs) / 1e6 / wall }) + '\n');
    gaps = []; n = 0; busyNs = 0n; t0 = process.hrtime.bigint(); lastEnd = 0n;
    return;
  }
  if (req.url === '/healthz') { res.end('ok'); return; }
  const start = process.hrtime.bigint();
  if (lastEnd !== 0n) { const g = Number(start - lastEnd) / 1000; if (g < 50000) gaps.push(g); }
  const until = start + BigInt(spinMs * 1e6);
  while (process.hrtime.bigint() < until) {}
  res.setHeader('Content-Type', 'text/html');
  res.end(page);
  n++;
  const end = process.hrtime.bigint();
  busyNs += end - start;
  lastEnd = end;
}).listen(+process.env.PORT, '127.0.0.1');
