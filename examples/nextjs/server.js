// The custom server of docs/recipes.md: next's request handler wrapped by
// sluice-worker, which stamps the event loop's saturation on every
// response (so that sluice's concurrency: auto is exact), answers /healthz
// and drains on SIGTERM. sluice starts it as `node server.js`.
const http = require('node:http');
const next = require('next');
const sluice = require('sluice-worker');

const app = next({ dev: false, dir: __dirname }); // next.config.js: { compress: false }
const handle = app.getRequestHandler();

app.prepare().then(() => {
  const server = http.createServer(sluice.wrap((req, res) => handle(req, res)));
  sluice.attach(server);
  return sluice.listen(server); // $PORT or $SLUICE_SOCKET
});
