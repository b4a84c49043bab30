// Package testutil holds the helpers that tests in several packages share:
// a Buffer that a child process's two output pipes may write at once, an
// in-memory Network whose connections live in a testing/synctest bubble,
// and the harness that builds the sluice binary, starts it (or any
// command) as a child process and waits for it to be ready.
//
// It is imported only by tests.
package testutil
