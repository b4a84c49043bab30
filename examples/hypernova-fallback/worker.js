'use strict';
// A tiny server-side-rendering worker for the Hypernova-style fallback
// example: node:http only, no dependencies. A page's props come in the
// request, as JSON in the query string (?props={...}), as Hypernova's
// callers sent them; the page is rendered from them with render.js, the
// function the client-render shell (shell.html) runs in the browser when
// the server could not render.
//
// Environment: PORT (listen on 127.0.0.1:PORT) or SLUICE_SOCKET (a unix
// socket), as sluice's workers.address says.
//
// Routes:
//   GET /healthz  200 "ok": readiness for workers.readyPath
//   GET /?props=  the page. Props that make it fail, to see the fallback:
//                 {"fail": true}   answer 500 (fallback: onWorkerError)
//                 {"crash": true}  drop the connection: sluice answers 502
//                                  (fallback: bad-gateway)
//                 {"slowMs": N}    render after N ms; past proxy.timeout
//                                  sluice answers 504 (fallback: timeout)

const http = require('node:http');
const { render } = require('./render');

function page(props) {
  // The server's markup, and the props for the client to hydrate from:
  // escaped as the shell's are, so that no prop can end the <script>.
  const json = JSON.stringify(props).replace(/[<>&\u2028\u2029]/g,
    (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
  return '<!doctype html><html><head><meta charset="utf-8"><title>SSR</title></head><body>' +
    '<div id="root" data-rendered="server">' + render(props) + '</div>' +
    '<script type="application/json" id="props">' + json + '</script></body></html>';
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://worker');
  if (url.pathname === '/healthz') {
    res.end('ok');
    return;
  }
  let props = {};
  try {
    props = JSON.parse(url.searchParams.get('props') || '{}');
  } catch {
    res.writeHead(400, { 'Content-Type': 'text/plain' });
    res.end('props are not JSON\n');
    return;
  }
  if (props.crash) {
    req.socket.destroy();
    return;
  }
  const answer = () => {
    if (props.fail) {
      res.writeHead(500, { 'Content-Type': 'text/plain' });
      res.end('render failed\n');
      return;
    }
    const body = page(props);
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  };
  const ms = Math.min(Number(props.slowMs) || 0, 60_000);
  if (ms > 0) setTimeout(answer, ms);
  else answer();
});

if (process.env.SLUICE_SOCKET) server.listen(process.env.SLUICE_SOCKET);
else server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
