package main

import (
	"os"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/sdk/plugintest"
)

// TestKitRunnerReportsAsGoTest: the runner of `plugins test` gives the
// kits' checks go test's semantics without the testing package: Fatal and
// Skip end a check, a failure fails its parents, --run filters per level,
// cleanups run and temp dirs go when a check ends.
func TestKitRunnerReportsAsGoTest(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	r := &kitRun{name: "Conformance", out: &out, pattern: []string{"sandbox", "x", "Fail|Skip|Pass"}}
	var dir string
	var order []string
	r.Run("", func(c *kitRun) {
		plugintest.Run(c, "sandbox/x", func(t plugintest.T) {
			plugintest.Run(t, "Pass", func(t plugintest.T) {
				dir = t.TempDir()
				t.Cleanup(func() { order = append(order, "first") })
				t.Cleanup(func() { order = append(order, "second") })
			})
			plugintest.Run(t, "Fail", func(t plugintest.T) {
				t.Fatalf("broken: %d", 42)
				t.Errorf("not reached")
			})
			plugintest.Run(t, "Skip", func(t plugintest.T) { t.Skipf("no engine") })
			plugintest.Run(t, "Other", func(t plugintest.T) { t.Errorf("filtered out, not run") })
		})
		plugintest.Run(c, "agent/y", func(t plugintest.T) { t.Errorf("filtered out, not run") })
	})
	got := out.String()
	for _, want := range []string{
		"--- FAIL: Conformance/sandbox/x/Fail", "broken: 42", "--- FAIL: Conformance/sandbox/x (", "--- FAIL: Conformance (",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"not reached", "filtered out", "PASS", "SKIP"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("output holds %q (without -v only failures show):\n%s", unwanted, got)
		}
	}
	if !r.failed.Load() {
		t.Error("the root did not fail")
	}
	if strings.Join(order, ",") != "second,first" {
		t.Errorf("cleanups ran as %v, want last registered first", order)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the temp dir %s outlived its check: %v", dir, err)
	}
}

// TestPluginsTestOfSandduneTestsItsBuiltins: given sanddune itself,
// `plugins test` runs the kits against the built-ins it serves, started
// as the plugin host starts them.
func TestPluginsTestOfSandduneTestsItsBuiltins(t *testing.T) {
	t.Parallel()
	r := run(t, t.TempDir(), "plugins", "test", sanddune, "-v", "--run", "sandbox/local")
	if r.code != 0 || !strings.Contains(r.stdout, "--- PASS: Conformance/sandbox/local/ExitCodes") || strings.Contains(r.stdout, "agent/") {
		t.Fatalf("exit %d, want 0 with the local sandbox's checks passing and no agent's:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
