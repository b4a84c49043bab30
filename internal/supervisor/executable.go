package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Executable reports whether c.Args[0] names a program that can be
// started, found as the worker's start finds it: relative to c.Dir when it
// holds a slash, else in the PATH of c.Env (sluice's own when c.Env sets
// none). New and SetCommand check it, so that a misspelt command is an
// error before anything starts, not a worker that crash-loops while
// clients get 503. It cannot see what the program does once started (a
// script's interpreter missing, say).
func (c Command) Executable() error {
	if len(c.Args) == 0 || c.Args[0] == "" {
		return errors.New("supervisor: Command is empty: the worker's program is required")
	}
	if runtime.GOOS == "windows" {
		return nil // the lookup differs there (PATHEXT): left to the start
	}
	name := c.Args[0]
	if strings.ContainsRune(name, '/') {
		p := name
		if !filepath.IsAbs(p) && c.Dir != "" {
			p = filepath.Join(c.Dir, p)
		}
		if err := executableFile(p); err != nil {
			return fmt.Errorf("supervisor: worker command %q: %w", name, err)
		}
		return nil
	}
	path, ok := os.LookupEnv("PATH")
	for _, kv := range c.Env { // the last one wins, as in the worker's environment
		if v, found := strings.CutPrefix(kv, "PATH="); found {
			path, ok = v, true
		}
	}
	if !ok || path == "" {
		return fmt.Errorf("supervisor: worker command %q: not found: PATH is empty (name the program by its path)", name)
	}
	var denied error
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		if !filepath.IsAbs(dir) && c.Dir != "" {
			dir = filepath.Join(c.Dir, dir)
		}
		err := executableFile(filepath.Join(dir, name))
		if err == nil {
			return nil
		}
		if errors.Is(err, errNotExecutable) && denied == nil {
			denied = err
		}
	}
	if denied != nil {
		return fmt.Errorf("supervisor: worker command %q: %w", name, denied)
	}
	return fmt.Errorf("supervisor: worker command %q: not found in $PATH", name)
}

// errNotExecutable is a file that exists but cannot be run.
var errNotExecutable = errors.New("not executable")

func executableFile(p string) error {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: no such file", p)
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory: %w", p, errNotExecutable)
	case fi.Mode()&0o111 == 0:
		return fmt.Errorf("%s (%v) is %w: chmod +x it, or put its interpreter first (node %s)", p, fi.Mode().Perm(), errNotExecutable, filepath.Base(p))
	}
	return nil
}
