package cli

import (
	"slices"
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
		{"capacity steady", noisyNote(150, 180), ""},
		{"capacity moved", noisyNote(36, 160), "capacity moved between 36 and 160 renders/s"},
		{"no capacity", noisyNote(0, 0), ""},
	} {
		if tt.want == "" && tt.got != "" || !strings.Contains(tt.got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

// Past capacity the baseline leaves its workers a backlog, so it runs after
// sluice; at or below capacity it runs first.
func TestStepOrder(t *testing.T) {
	for _, tt := range []struct {
		m    float64
		want []int
	}{
		{0.5, []int{1, 0}},
		{1, []int{1, 0}},
		{2, []int{0, 1}},
		{4, []int{0, 1}},
	} {
		if got := stepOrder(tt.m, 2); !slices.Equal(got, tt.want) {
			t.Errorf("stepOrder(%g, 2) = %v, want %v", tt.m, got, tt.want)
		}
	}
}
