'use strict';
// The page, from its props: run by worker.js on the server, and by the
// shell (shell.html, which inlines a copy) in the browser. Every prop is
// HTML-escaped: props come from the request.

function escape(s) {
  return String(s).replace(/[&<>"']/g, (c) => '&#' + c.charCodeAt(0) + ';');
}

function render(props) {
  const items = Array.isArray(props.items) ? props.items : [];
  return '<h1>Hello, ' + escape(props.name || 'world') + '</h1><ul>' +
    items.map((i) => '<li>' + escape(i) + '</li>').join('') + '</ul>';
}

module.exports = { render, escape };
