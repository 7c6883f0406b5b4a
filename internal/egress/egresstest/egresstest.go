// Package egresstest helps the tests of the providers that enforce egress.
package egresstest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/missingstudio/sanddune/internal/egress"
)

// WithEnforcer runs a test binary's tests (m.Run) with the egress enforcer
// built, static as installed, into a temporary directory put first on
// PATH, where the providers find it.
func WithEnforcer(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sanddune-egress-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, egress.BinaryName), "github.com/missingstudio/sanddune/cmd/"+egress.BinaryName)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the egress enforcer: %v\n%s", err, out)
		return 1
	}
	os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return m.Run()
}
