package docs_test

import (
	"os"
	"path/filepath"
	"testing"
)

// The repository carries results, not the raw output a run regenerates:
// a tracked file past maxTrackedFile, or a tree past maxTrackedTree, is
// almost always a run's dump or a binary committed by mistake.
const (
	maxTrackedFile = 200 << 10
	maxTrackedTree = 4 << 20
)

func TestTrackedTreeStaysSmall(t *testing.T) {
	files, err := gitFiles("..")
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	var total int64
	for f := range files {
		fi, err := os.Lstat(filepath.Join("..", filepath.FromSlash(f)))
		if err != nil {
			// Deleted in the work tree, not yet in the index: not carried.
			continue
		}
		if fi.Size() > maxTrackedFile {
			t.Errorf("%s is %d KiB, over the %d KiB a tracked file may be: regenerate it instead (docs/benchmarks.md)", f, fi.Size()>>10, maxTrackedFile>>10)
		}
		total += fi.Size()
	}
	if total > maxTrackedTree {
		t.Errorf("the tracked files total %.2f MiB, over %d MiB", float64(total)/(1<<20), maxTrackedTree>>20)
	}
	t.Logf("%d tracked files, %.2f MiB", len(files), float64(total)/(1<<20))
}
