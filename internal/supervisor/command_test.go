package supervisor

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
)

// A reload's new command reaches the workers started after it: a rolling
// restart takes it to every slot; the workers running meanwhile keep theirs.
func TestSetCommand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 2, Command: []string{"old", "-x"}, Env: []string{"A=1"}, Dir: "/srv/old"}, nil)
		h.rec.take()
		prev, err := h.sup.SetCommand(Command{Args: []string{"new"}, Env: []string{"A=2", "SLUICE_WORKER_ID=99"}, Dir: "/srv/new"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(prev.Args, []string{"old", "-x"}) || !slices.Equal(prev.Env, []string{"A=1"}) || prev.Dir != "/srv/old" {
			t.Errorf("SetCommand returned %+v, want the old command", prev)
		}
		if got := h.sup.Command(); !slices.Equal(got.Args, []string{"new"}) || got.Dir != "/srv/new" {
			t.Errorf("Command() = %+v, want the new one", got)
		}
		if err := h.sup.RollingRestart(context.Background()); err != nil {
			t.Fatal(err)
		}
		h.env.mu.Lock()
		starts := slices.Clone(h.env.starts)
		h.env.mu.Unlock()
		if len(starts) != 4 {
			t.Fatalf("got %d starts, want 2 then 2 replacements", len(starts))
		}
		for i, s := range starts {
			want, dir, a := []string{"old", "-x"}, "/srv/old", "1"
			if i >= 2 {
				want, dir, a = []string{"new"}, "/srv/new", "2"
			}
			if !slices.Equal(s.args, want) || s.dir != dir || envValue(s.env, "A") != a {
				t.Errorf("start %d: args %v dir %q A=%s, want %v %q A=%s", i, s.args, s.dir, envValue(s.env, "A"), want, dir, a)
			}
			// The supervisor's own variables win over the command's.
			if id := envValue(s.env, "SLUICE_WORKER_ID"); id == "99" {
				t.Errorf("start %d: SLUICE_WORKER_ID from the command's env", i)
			}
		}
	})
}

func TestSetCommandValidates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 1, Command: []string{"old"}}, nil)
		if _, err := h.sup.SetCommand(Command{Env: []string{"NOEQUALS"}}); err == nil {
			t.Fatal("SetCommand with no program and a bad Env entry: got nil error")
		}
		if got := h.sup.Command(); !slices.Equal(got.Args, []string{"old"}) {
			t.Errorf("after a refused SetCommand: Command() = %v, want the old one kept", got.Args)
		}
	})
}
