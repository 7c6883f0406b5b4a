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
	dir, cfg, example := readmeExample(t, "## Configuration")
	writeFile(t, cfg, example)
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
	dir, cfg, example := readmeExample(t, "### Pipelines: runs that depend on runs")
	writeFile(t, cfg, example)
	if r := run(t, dir, "fmt", "--check", cfg); r.code != 0 {
		t.Errorf("the README example is not canonically formatted (sanddune fmt):\n%s%s", r.stdout, r.stderr)
	}
	writeFile(t, cfg, "sandbox \"local\" \"dev\" {}\nagent \"command\" \"a\" { command = [\"true\"] }\n"+example)
	writeFile(t, filepath.Join(dir, ".sanddune", "plan.md"), "Plan; answer <plan>{...}</plan>.\n")
	writeFile(t, filepath.Join(dir, ".sanddune", "implement.md"), "Implement {{ID}}.\n")
	writeFile(t, filepath.Join(dir, ".sanddune", "merge.md"), "Merge {{BRANCHES}}; conflicts: {{CONFLICTS}}.\n")
	if r := run(t, dir, "validate"); r.code != 0 {
		t.Errorf("the README example does not validate:\n%s%s", r.stdout, r.stderr)
	}
}

// TestREADMESessionAndDockerExamples keeps the README's session example
// and its docker + claude quick start true: canonically formatted and
// valid (with the providers they refer to).
func TestREADMESessionAndDockerExamples(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ heading, providers string }{
		{"### Sessions: steps in one sandbox", "sandbox \"docker\" \"default\" {}\nagent \"claude\" \"opus\" {\n  model = \"claude-opus-4-5\"\n}\n"},
		{"### Switching the quick start to Docker and Claude", ""},
	} {
		dir, cfg, example := readmeExample(t, tc.heading)
		writeFile(t, cfg, example)
		if r := run(t, dir, "fmt", "--check", cfg); r.code != 0 {
			t.Errorf("%s: not canonically formatted (sanddune fmt):\n%s%s", tc.heading, r.stdout, r.stderr)
		}
		writeFile(t, cfg, tc.providers+example)
		for _, p := range []string{"implement.md", "review.md"} {
			writeFile(t, filepath.Join(dir, ".sanddune", p), "Work.\n")
		}
		writeFile(t, filepath.Join(dir, ".sanddune", "prompt.md"), "# {{GREETING}}\n")
		cmd := sandduneCmd(dir, "validate")
		cmd.Env = append(cmd.Env, "ANTHROPIC_API_KEY=sk-fake")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: does not validate: %v\n%s", tc.heading, err, out)
		}
	}
}

// readmeExample is the first hcl block under heading in README.md, and a
// repo with a config path to write it to.
func readmeExample(t *testing.T, heading string) (dir, cfg, example string) {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)" + regexp.QuoteMeta(heading) + "\n.*?```hcl\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatalf("no hcl block under %s in README.md", heading)
	}
	dir = gitRepo(t)
	return dir, filepath.Join(dir, ".sanddune", "sanddune.hcl"), string(m[1])
}
