package cli

import (
	"strings"
	"testing"
)

// The demo says when its figures are those of a shared machine, rather
// than leave a reader to doubt what they show.
func TestDemoNotes(t *testing.T) {
	for _, tt := range []struct {
		name string
		got  string
		want string // "" for no note
	}{
		{"idle machine", busyNote(0.4, 2), ""},
		{"at its CPUs", busyNote(2, 2), ""},
		{"busy machine", busyNote(12.4, 2), "note: this machine is busy (load average 12.4 on 2 CPUs)"},
		{"no load average", busyNote(-1, 2), ""},
		{"capacity kept", driftNote(200, 170), ""},
		{"capacity grew", driftNote(126, 200), "capacity measured again after the ramp: 200 renders/s, against 126 before"},
		{"capacity fell", driftNote(200, 85), "capacity measured again after the ramp: 85 renders/s, against 200 before"},
	} {
		if tt.want == "" && tt.got != "" || !strings.Contains(tt.got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
