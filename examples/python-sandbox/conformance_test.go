// Package pysandbox_test runs sanddune's sandbox conformance kit against
// the Python plugin in this directory, started the way sanddune starts
// plugins, so docs/plugin-protocol.md stays true for plugins in any
// language.
package pysandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/missingstudio/sanddune/sdk/sandboxtest"
)

// protoDir holds the public protocol definition,
// sanddune/plugin/v1/plugin.proto.
const protoDir = "../../sdk/proto"

// python is Debian's interpreter, whose python3-grpcio, python3-protobuf
// and python3-cryptography the plugin uses (scripts/ci-setup.sh installs
// them).
const python = "/usr/bin/python3"

// TestPythonPluginConformance needs python3 with grpc and protoc: it fails
// without them under SANDDUNE_REQUIRE_ENGINES=1 (CI) and skips loudly
// otherwise.
func TestPythonPluginConformance(t *testing.T) {
	missing := func(what string, err error, out []byte) {
		t.Helper()
		msg := what + " is missing (scripts/ci-setup.sh installs it): " + err.Error() + "\n" + string(out)
		if os.Getenv("SANDDUNE_REQUIRE_ENGINES") == "1" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPING the Python plugin's conformance run: " + msg)
	}
	if out, err := exec.Command(python, "-c", "import grpc, google.protobuf, cryptography").CombinedOutput(); err != nil {
		missing("python3 with python3-grpcio, python3-protobuf and python3-cryptography", err, out)
	}
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		missing("protoc (protobuf-compiler)", err, nil)
	}
	// The plugin as its author would ship it: the script, and the message
	// classes protoc generates next to it.
	dir := t.TempDir()
	if out, err := exec.Command(protoc, "-I", protoDir, "--python_out="+dir, "sanddune/plugin/v1/plugin.proto").CombinedOutput(); err != nil {
		t.Fatalf("protoc: %v\n%s", err, out)
	}
	script, err := os.ReadFile("sanddune-plugin-pysandbox")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sanddune-plugin-pysandbox")
	if err := os.WriteFile(bin, script, 0o755); err != nil {
		t.Fatal(err)
	}
	sandboxtest.RunBinary(t, bin, "pysandbox", sandboxtest.Options{})
}
