package supervisor

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Command is what a worker process runs: Options.Command, Env and Dir.
type Command struct {
	Args []string // the program and its arguments
	Env  []string // KEY=VALUE, added to sluice's environment
	Dir  string   // working directory; "" is sluice's
}

// Validate reports every wrong field of c, one error each.
func (c Command) Validate() error {
	var errs []error
	if len(c.Args) == 0 || c.Args[0] == "" {
		errs = append(errs, errors.New("supervisor: Command is empty: the worker's program is required"))
	}
	for _, kv := range c.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			errs = append(errs, fmt.Errorf("supervisor: Env entry %q is not KEY=VALUE", kv))
		}
	}
	return errors.Join(errs...)
}

// Command returns what workers started from now on run.
func (s *Supervisor) Command() Command {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Command{Args: slices.Clone(s.opts.Command), Env: slices.Clone(s.opts.Env), Dir: s.opts.Dir}
}

// SetCommand changes what workers started from now on run (a restart after
// a crash, a RollingRestart) and returns what they ran before; the workers
// running keep their process. A configuration reload calls it, then
// RollingRestart to take the new command to every slot. The supervisor's
// own variables (PORT or SLUICE_SOCKET, SLUICE_WORKER_ID and _SLOT) still
// win over c.Env. A command whose program cannot be started
// (Command.Executable) is refused.
func (s *Supervisor) SetCommand(c Command) (prev Command, err error) {
	if err := c.Validate(); err != nil {
		return Command{}, err
	}
	if err := s.env.executable(c); err != nil {
		return Command{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	prev = Command{Args: s.opts.Command, Env: s.opts.Env, Dir: s.opts.Dir}
	s.opts.Command, s.opts.Env, s.opts.Dir = slices.Clone(c.Args), slices.Clone(c.Env), c.Dir
	return prev, nil
}
