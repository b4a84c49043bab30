package config

import (
	"errors"
	"fmt"
	"strings"
)

// Error is one problem in a configuration: where it is and what is wrong.
type Error struct {
	// File is the name the configuration was parsed under; "" for a Config
	// built in Go.
	File string
	// Line is the 1-based line of the key; 0 when the key is not in the file
	// (a default that conflicts with a value that is).
	Line int
	// Path is the key's dotted path, such as "server.backpressure.minLimit"
	// or "routes[2].match.header"; "" for a problem with the whole file.
	Path string
	// Msg says what is wrong.
	Msg string
	// Warning marks a problem that does not stop sluice: a key written in
	// the file that has no effect in the configuration it is part of.
	Warning bool
	// Flag is the command-line flag that set the key ("--listen"), when
	// the problem is its value; File and Line are then empty.
	Flag string
}

// Error formats the problem as file:line: path: message, leaving out the
// parts that are unknown; a warning reads file:line: warning: path: message,
// and a flag's problem --flag: path: message.
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.Flag != "":
		fmt.Fprintf(&b, "%s: ", e.Flag)
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		fmt.Fprintf(&b, "%s: ", e.File)
	default:
		b.WriteString("config: ")
	}
	if e.Warning {
		b.WriteString("warning: ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in one configuration, in file order. Parse,
// ParseWith, ResolveWith and Validate return it (never empty) as their error; errors.As finds
// it, and each *Error in it.
type Errors []*Error

// Error returns the problems, one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems, for errors.Is and errors.As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// List returns every *Error in err: the members of an Errors, a lone
// *Error, or nil when err holds none (such as a file that could not be read).
func List(err error) []*Error {
	var es Errors
	if errors.As(err, &es) {
		return es
	}
	var e *Error
	if errors.As(err, &e) {
		return []*Error{e}
	}
	return nil
}
