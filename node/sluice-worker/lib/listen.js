'use strict';
// Where a worker listens. sluice starts each worker with PORT (listen on
// 127.0.0.1:PORT, its workers.address: port) or SLUICE_SOCKET (a unix
// socket path, workers.address: unix).

const fs = require('node:fs');

const DEFAULT_HOST = '127.0.0.1';
// A worker started by hand, outside sluice, whose front takes 3000.
const DEFAULT_PORT = 3001;

function parsePort(value, from) {
  const s = String(value);
  const n = /^\d{1,5}$/.test(s) ? Number(s) : NaN;
  if (!(n >= 0 && n <= 65535)) throw new RangeError(`sluice-worker: ${from} must be a port number 0..65535, got ${JSON.stringify(value)}`);
  return n;
}

// target returns net.Server listen options: {path} or {host, port}.
// Explicit options win over the environment; an empty variable is unset.
function target(options, env) {
  if (options.socket) return { path: options.socket };
  if (options.port !== undefined) return { host: options.host ?? DEFAULT_HOST, port: parsePort(options.port, 'port') };
  if (env.SLUICE_SOCKET) return { path: env.SLUICE_SOCKET };
  const port = env.PORT ? parsePort(env.PORT, 'PORT') : DEFAULT_PORT;
  return { host: options.host ?? DEFAULT_HOST, port };
}

// A socket file left by a predecessor that died makes listen fail with
// EADDRINUSE; sluice gives each worker its own path, so it is stale.
function removeStaleSocket(path) {
  try {
    if (fs.statSync(path).isSocket()) fs.unlinkSync(path);
  } catch (err) {
    if (err.code !== 'ENOENT') throw err;
  }
}

function describe(address) {
  return typeof address === 'string' ? address : `${address.address}:${address.port}`;
}

// listen starts server listening where sluice asked (options.socket,
// options.port and options.host override SLUICE_SOCKET and PORT from
// options.env, default process.env) and resolves with the address as
// "host:port" or the socket path. It rejects with listen's error.
function listen(server, options = {}) {
  const to = target(options, options.env ?? process.env);
  return new Promise((resolve, reject) => {
    if (to.path) removeStaleSocket(to.path);
    const onError = (err) => reject(err);
    server.once('error', onError);
    server.listen(to, () => {
      server.off('error', onError);
      resolve(describe(server.address()));
    });
  });
}

module.exports = { listen, target, DEFAULT_HOST, DEFAULT_PORT };
