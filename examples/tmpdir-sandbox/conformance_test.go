package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/missingstudio/sanddune/sdk/sandboxtest"
)

func TestConformance(t *testing.T) {
	sandboxtest.Run(t, newProvider(), sandboxtest.Options{})
}

// TestConformanceBinary runs the kit against the built plugin binary,
// started as sanddune starts it (handshake, AutoMTLS).
func TestConformanceBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "sanddune-plugin-tmpdir")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	sandboxtest.RunBinary(t, bin, "tmpdir", sandboxtest.Options{})
}
