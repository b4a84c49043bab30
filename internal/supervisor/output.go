package supervisor

import (
	"bytes"
	"io"
	"log/slog"
	"strconv"
	"sync"
)

// output carries the workers' stdout and stderr to Options.Output, or to
// the logger when there is none.
type output struct {
	log *slog.Logger
	mu  sync.Mutex // serialises writes to w
	w   io.Writer
}

// stream returns the writer for one stream ("stdout" or "stderr") of worker
// id. Each Write must be one whole line.
func (o *output) stream(id int, name string) io.Writer {
	return &lineSink{o: o, id: id, stream: name, prefix: []byte("worker " + strconv.Itoa(id) + ": ")}
}

type lineSink struct {
	o      *output
	id     int
	stream string
	prefix []byte
	buf    []byte // used by one copier goroutine only
}

func (l *lineSink) Write(p []byte) (int, error) {
	if l.o.w == nil {
		l.o.log.Info(string(bytes.TrimRight(p, "\r\n")), "worker", l.id, "stream", l.stream)
		return len(p), nil
	}
	l.buf = append(append(l.buf[:0], l.prefix...), p...)
	l.o.mu.Lock()
	defer l.o.mu.Unlock()
	if _, err := l.o.w.Write(l.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}
