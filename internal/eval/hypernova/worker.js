'use strict';
// The evaluation suite's Hypernova worker (scenario hypernova): Airbnb's
// server-side rendering service, the npm package hypernova, rendering
// page.js's listing page with React 19 for POST /batch jobs such as
//
//   {"page":{"name":"Page","data":{"page":7,"items":26}}}
//
// and answering Hypernova's batch result, the page's HTML followed by its
// props in a <script> (hypernova's serialize, as hypernova-react's
// renderReact does; hypernova-react 2.1.0 itself is left out because its
// peer dependencies stop at React 16).
//
// Environment:
//   PORT                the port to listen on, on 127.0.0.1 (required)
//   HYPERNOVA_WORKERS   unset: devMode, one process serving the port (what
//                       a front such as HAProxy or sluice balances over);
//                       N: Hypernova's own coordinator, a cluster of N
//                       worker processes sharing the port.
//
// Hypernova has no health route: a front probes POST /batch or a connect.
//
// NODE_ENV defaults to production, as a deploy sets it: React's
// development build renders several times slower, and a worker started
// by a supervisor that passes its own environment on must render as one
// started by the suite.

process.env.NODE_ENV = process.env.NODE_ENV || 'production';

const hypernova = require('hypernova/server');
const { serialize } = require('hypernova');
const React = require('react');
const { renderToString } = require('react-dom/server');
const page = require('./page.js');

const port = Number.parseInt(process.env.PORT || '', 10);
if (!(port > 0)) {
  console.error('hypernova worker: PORT must be a port number');
  process.exit(2);
}
const workers = Number.parseInt(process.env.HYPERNOVA_WORKERS || '0', 10);

// components is what a job's name may ask for.
const components = { Page: page.Page, ListingPage: page.ListingPage };

function getComponent(name) {
  const component = components[name];
  if (!component) return null;
  return (props) => serialize(name, renderToString(React.createElement(component, props)), props);
}

hypernova({
  devMode: !(workers > 0),
  getCPUs: () => workers,
  getComponent,
  host: '127.0.0.1',
  port,
  // Hypernova logs every request at info: the suite's runs would write
  // hundreds of megabytes.
  logger: { level: 'warn' },
});
