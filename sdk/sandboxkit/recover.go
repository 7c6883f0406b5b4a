package sandboxkit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Open returns the directory of a sandbox that List returned, with
// symlinks resolved, for sdk.SandboxRecoverer. It refuses any other path.
func (t TempDirs) Open(id string) (string, error) {
	dir := filepath.Clean(id)
	if filepath.Dir(dir) != filepath.Clean(os.TempDir()) || !strings.HasPrefix(filepath.Base(dir), t.Prefix) {
		return "", fmt.Errorf("%q is not a sandbox directory", id)
	}
	if _, err := os.Stat(filepath.Join(dir, t.LabelsFile)); err != nil {
		return "", fmt.Errorf("%q is not a sandbox directory: %w", id, err)
	}
	return filepath.EvalSymlinks(dir)
}
