package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestREADMEConfigExample keeps the README's configuration example true:
// it is canonically formatted and valid.
func TestREADMEConfigExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## Configuration\n.*?```hcl\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("no hcl block under ## Configuration in README.md")
	}
	dir := gitRepo(t)
	cfg := filepath.Join(dir, ".sanddune", "sanddune.hcl")
	writeFile(t, cfg, string(m[1]))
	writeFile(t, filepath.Join(dir, ".sanddune", "prompt.md"), "Fix issue {{ISSUE_NUMBER}} on {{SOURCE_BRANCH}}.\n")
	if r := run(t, dir, "fmt", "--check", cfg); r.code != 0 {
		t.Errorf("the README example is not canonically formatted (sanddune fmt):\n%s%s", r.stdout, r.stderr)
	}
	cmd := sandduneCmd(dir, "validate")
	cmd.Env = append(cmd.Env, "ANTHROPIC_API_KEY=sk-fake")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the README example does not validate: %v\n%s", err, out)
	}
}

// TestREADMEPipelineExample keeps the README's pipeline example true: it
// is canonically formatted and valid (with a sandbox and an agent).
func TestREADMEPipelineExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)### Pipelines.*?```hcl\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("no hcl block under ### Pipelines in README.md")
	}
	dir := gitRepo(t)
	cfg := filepath.Join(dir, ".sanddune", "sanddune.hcl")
	writeFile(t, cfg, string(m[1]))
	if r := run(t, dir, "fmt", "--check", cfg); r.code != 0 {
		t.Errorf("the README example is not canonically formatted (sanddune fmt):\n%s%s", r.stdout, r.stderr)
	}
	writeFile(t, cfg, "sandbox \"local\" \"dev\" {}\nagent \"command\" \"a\" { command = [\"true\"] }\n"+string(m[1]))
	writeFile(t, filepath.Join(dir, ".sanddune", "plan.md"), "Plan.\n")
	writeFile(t, filepath.Join(dir, ".sanddune", "implement.md"), "Implement {{ITEM}}.\n")
	writeFile(t, filepath.Join(dir, ".sanddune", "merge.md"), "Merge {{BRANCHES}}; conflicts: {{CONFLICTS}}.\n")
	if r := run(t, dir, "validate"); r.code != 0 {
		t.Errorf("the README example does not validate:\n%s%s", r.stdout, r.stderr)
	}
}
