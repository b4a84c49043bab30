'use strict';
// A handler that writes past its Content-Length never puts bytes on the
// connection that a front would read as the next request's response.

const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const net = require('node:net');
const { once } = require('node:events');
const sluice = require('..');
const { listening, close } = require('../testing/helpers');

const POISON = 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 8\r\n\r\nPOISON!!';

test('bytes past Content-Length close the connection instead', async () => {
  let late;
  const wrote = new Promise((resolve) => { late = resolve; });
  const server = http.createServer(sluice.wrap((req, res) => {
    if (req.url === '/mismatch') {
      res.setHeader('Content-Length', 5);
      res.write('hello');
      setTimeout(() => {
        res.write(POISON);
        res.end();
        late();
      }, 30);
      return;
    }
    res.end(`you asked for ${req.url}`);
  }));
  process.once('warning', () => {}); // the one warning, expected
  const port = await listening(server);
  try {
    // As a front: the first request, then another on the same connection.
    const socket = net.connect(port, '127.0.0.1');
    await once(socket, 'connect');
    let got = '';
    socket.on('data', (d) => { got += d; });
    socket.write('GET /mismatch HTTP/1.1\r\nHost: w\r\n\r\n');
    socket.write('GET /private/user0 HTTP/1.1\r\nHost: w\r\n\r\n');
    await wrote;
    await once(socket, 'close');
    assert.ok(got.includes('\r\n\r\nhello'), `the first response is answered: ${JSON.stringify(got)}`);
    assert.ok(!got.includes('POISON'), `the extra bytes reached the connection: ${JSON.stringify(got)}`);
    assert.ok(!got.includes('you asked for'), `the next request was answered on a connection whose framing broke: ${JSON.stringify(got)}`);
  } finally {
    await close(server);
  }
});
