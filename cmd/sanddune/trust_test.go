package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/core/pluginhost"
)

// runNoPluginPath runs sanddune without SANDDUNE_PLUGIN_PATH, so that only
// the repository's .sanddune/plugins (and the test's user dir) are searched.
func runNoPluginPath(t *testing.T, dir string, args ...string) result {
	t.Helper()
	cmd := sandduneCmd(dir, args...)
	cmd.Env = append(cmd.Env, "SANDDUNE_PLUGIN_PATH=")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

// TestCommittedPluginBinaryRunsNothingUntilTrusted: a cloned repository's
// .sanddune/plugins/ binary — even with a lock file committed next to it —
// is not executed by validate, run, plugins list or a plugin command, and
// cannot replace a built-in.
func TestCommittedPluginBinaryRunsNothingUntilTrusted(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	marker := filepath.Join(t.TempDir(), "executed")
	evil := "#!/bin/sh\ntouch " + marker + "\n"
	for _, name := range []string{"evil", "local"} {
		writeFile(t, filepath.Join(dir, ".sanddune/plugins/sanddune-plugin-"+name), evil)
		os.Chmod(filepath.Join(dir, ".sanddune/plugins/sanddune-plugin-"+name), 0o755)
	}
	sum, _ := pluginhost.FileSHA256(filepath.Join(dir, ".sanddune/plugins/sanddune-plugin-evil"))
	writeFile(t, filepath.Join(dir, ".sanddune/plugins.lock.hcl"), "plugin \"evil\" {\n  source = \".sanddune/plugins/sanddune-plugin-evil\"\n  sha256 = \""+sum+"\"\n}\n")
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "evil" "x" {}
sandbox "local" "l" {}
agent "command" "a" { command = ["true"] }
run "r" {
  sandbox = sandbox.evil.x
  agent   = agent.command.a
  prompt  = "p"
}
`)
	r := runNoPluginPath(t, dir, "validate")
	if r.code == 0 || !strings.Contains(r.stderr, "you have not trusted it") || !strings.Contains(r.stderr, "sanddune plugins lock") {
		t.Fatalf("validate: exit %d, want a refusal of the untrusted binary\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, `sandbox.local.l`) {
		t.Errorf("the built-in local was replaced by the repository's binary:\n%s", r.stderr)
	}
	for _, args := range [][]string{{"run"}, {"plugins", "list"}, {"evil", "x"}, {"gc", "--dry-run"}} {
		r := runNoPluginPath(t, dir, args...)
		if args[0] == "plugins" && !strings.Contains(r.stdout, "not trusted, not started") {
			t.Errorf("plugins list does not show the binary as untrusted:\n%s", r.stdout)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a plugin binary committed to the repository was executed before the user trusted it")
	}
}

// TestPluginsLockThenTamperedBinaryRefused: after `sanddune plugins lock` a
// repository's plugin runs; changed afterwards, it is refused with both
// checksums, the lock file and the command to re-lock.
func TestPluginsLockThenTamperedBinaryRefused(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	bin := filepath.Join(dir, ".sanddune/plugins/sanddune-plugin-tmpdir")
	b, err := os.ReadFile(filepath.Join(pluginDir, "sanddune-plugin-tmpdir"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, bin, string(b))
	os.Chmod(bin, 0o755)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "tmpdir" "t" {}
agent "command" "a" { command = ["true"] }
run "r" {
  sandbox = sandbox.tmpdir.t
  agent   = agent.command.a
  prompt  = "p"
}
`)
	if r := runNoPluginPath(t, dir, "validate"); r.code == 0 {
		t.Fatalf("validate passed before the binary was trusted:\n%s%s", r.stdout, r.stderr)
	}
	r := runNoPluginPath(t, dir, "plugins", "lock")
	locked, _ := pluginhost.FileSHA256(bin)
	if r.code != 0 || !strings.Contains(r.stdout, "locked tmpdir") || !strings.Contains(r.stdout, locked) {
		t.Fatalf("plugins lock: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	lockFile, _ := os.ReadFile(filepath.Join(dir, ".sanddune/plugins.lock.hcl"))
	if !strings.Contains(string(lockFile), locked) || !strings.Contains(string(lockFile), `source  = ".sanddune/plugins/sanddune-plugin-tmpdir"`) {
		t.Fatalf("lock file:\n%s", lockFile)
	}
	if r := runNoPluginPath(t, dir, "validate"); r.code != 0 {
		t.Fatalf("validate after plugins lock: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runNoPluginPath(t, dir, "plugins", "list"); !strings.Contains(r.stdout, "yes (repo)") {
		t.Fatalf("plugins list does not show the binary as locked:\n%s", r.stdout)
	}

	f, err := os.OpenFile(bin, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("tampered")
	f.Close()
	tampered, _ := pluginhost.FileSHA256(bin)
	r = runNoPluginPath(t, dir, "validate")
	if r.code == 0 {
		t.Fatalf("validate passed with a tampered binary:\n%s", r.stdout)
	}
	for _, want := range []string{locked, tampered, filepath.Join(dir, ".sanddune/plugins.lock.hcl"), "sanddune plugins lock"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the refusal does not name %q:\n%s", want, r.stderr)
		}
	}
	if r := runNoPluginPath(t, dir, "plugins", "list"); !strings.Contains(r.stdout, "MISMATCH (repo)") {
		t.Errorf("plugins list does not show the mismatch:\n%s", r.stdout)
	}
}

// TestRequiredPluginsSourceAndVersion: required_plugins replaces a
// built-in only by source; a version constraint the plugin does not meet
// is an error naming the constraint; a bad constraint is a diagnostic at
// the attribute.
func TestRequiredPluginsSourceAndVersion(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `required_plugins {
  tmpdir = { version = ">= 7.0" }
}
sandbox "tmpdir" "t" {}
agent "command" "a" { command = ["true"] }
run "r" {
  sandbox = sandbox.tmpdir.t
  agent   = agent.command.a
  prompt  = "p"
}
`)
	r := run(t, dir, "validate")
	if r.code == 0 || !strings.Contains(r.stderr, `">= 7.0"`) || !strings.Contains(r.stderr, "sanddune.hcl:2") {
		t.Fatalf("validate: exit %d, want the unmet version constraint\n%s", r.code, r.stderr)
	}
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `required_plugins {
  tmpdir = { version = "banana" }
}
`)
	r = run(t, dir, "validate")
	if r.code == 0 || !strings.Contains(r.stderr, "sanddune.hcl:2:") || !strings.Contains(r.stderr, "Invalid version constraint") {
		t.Fatalf("validate: exit %d, want a diagnostic at the attribute\n%s", r.code, r.stderr)
	}
	// A source replaces the built-in local: the tmpdir binary serves no
	// "local" component, which shows it was the one started.
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `required_plugins {
  local = { source = "`+filepath.Join(pluginDir, "sanddune-plugin-tmpdir")+`" }
}
sandbox "local" "l" {}
`)
	r = run(t, dir, "validate")
	if r.code == 0 || !strings.Contains(r.stderr, `serves no sandbox named "local"`) {
		t.Fatalf("validate: exit %d, want the required binary started instead of the built-in\n%s", r.code, r.stderr)
	}
}

func TestPluginsInstallCopiesAndPins(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := runNoPluginPath(t, dir, "plugins", "install", filepath.Join(pluginDir, "sanddune-plugin-tmpdir"))
	if r.code != 0 || !strings.Contains(r.stdout, "installed tmpdir") {
		t.Fatalf("plugins install: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runNoPluginPath(t, dir, "plugins", "list")
	if !strings.Contains(r.stdout, filepath.Join(dir, ".xdg/sanddune/plugins/sanddune-plugin-tmpdir")) || !strings.Contains(r.stdout, "yes (user)") {
		t.Fatalf("plugins list:\n%s", r.stdout)
	}
}

// TestPluginsTestRunsTheKit: `sanddune plugins test` runs the conformance
// kit against a plugin binary and fails for one that does not start.
func TestPluginsTestRunsTheKit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := run(t, dir, "plugins", "test", "-v", "--run", "sandbox/tmpdir/(ExitCodes|Cwd)$", filepath.Join(pluginDir, "sanddune-plugin-tmpdir"))
	if r.code != 0 || !strings.Contains(r.stdout, "--- PASS: Conformance/sandbox/tmpdir/ExitCodes") || !strings.Contains(r.stdout, "--- PASS: Conformance/sandbox/tmpdir/Cwd") {
		t.Fatalf("plugins test: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	broken := filepath.Join(dir, "sanddune-plugin-broken")
	writeFile(t, broken, "#!/bin/sh\necho 'no handshake today' >&2\nexit 3\n")
	os.Chmod(broken, 0o755)
	r = run(t, dir, "plugins", "test", broken)
	if r.code != 1 || !strings.Contains(r.stdout, "--- FAIL: Conformance") || !strings.Contains(r.stdout, "no handshake today") {
		t.Fatalf("plugins test of a broken plugin: exit %d, want 1 with its stderr\n%s%s", r.code, r.stdout, r.stderr)
	}
}
