package sandboxkit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
)

func TestTempDirsOpen(t *testing.T) {
	t.Setenv("TMPDIR", realTempDir(t))
	td := TempDirs{Prefix: "sandboxkit-test-", LabelsFile: "labels.json"}
	dir, err := td.Create("run-", map[string]string{sdk.LabelRun: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	defer td.Remove(dir)
	if got, err := td.Open(dir + "/"); err != nil || got != dir {
		t.Errorf("Open(%q) = %q, %v", dir, got, err)
	}
	unlabelled := filepath.Join(os.TempDir(), "sandboxkit-test-bare")
	if err := os.Mkdir(unlabelled, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(unlabelled)
	for _, bad := range []string{t.TempDir(), "/etc", filepath.Join(dir, "repo"), unlabelled, dir + "-gone"} {
		if _, err := td.Open(bad); err == nil {
			t.Errorf("Open(%q) accepted", bad)
		}
	}
}
