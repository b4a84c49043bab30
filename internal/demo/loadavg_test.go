package demo

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLoadAverageReadsTheOneMinuteFigure(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
		want          float64
	}{
		{"a Linux line", "1.25 0.80 0.40 2/345 6789\n", 1.25},
		{"idle", "0.00 0.01 0.05 1/100 42\n", 0},
		{"empty", "", -1},
		{"not a number", "high 0.80 0.40 2/345 6789\n", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name)
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := loadAverage(path); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if got := loadAverage(filepath.Join(dir, "missing")); got != -1 {
		t.Errorf("no such file: got %v, want -1", got)
	}
}
