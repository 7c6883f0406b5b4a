package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/core/config"
)

// TestDocsConfigExample keeps the configuration reference's full example
// true: it is canonically formatted and valid.
func TestDocsConfigExample(t *testing.T) {
	t.Parallel()
	dir, cfg, example := docExample(t, "docs/configuration.md", "## Example")
	writeFile(t, cfg, example)
	writeFile(t, filepath.Join(dir, ".sanddune", "prompt.md"), "Fix issue {{ISSUE_NUMBER}} on {{SOURCE_BRANCH}}.\n")
	if r := run(t, dir, "fmt", "--check", cfg); r.code != 0 {
		t.Errorf("the example is not canonically formatted (sanddune fmt):\n%s%s", r.stdout, r.stderr)
	}
	cmd := sandduneCmd(dir, "validate")
	cmd.Env = append(cmd.Env, "ANTHROPIC_API_KEY=sk-fake")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the example does not validate: %v\n%s", err, out)
	}
}

// TestDocsPipelineExample keeps the pipeline example true: it is
// canonically formatted and valid (with a sandbox and an agent).
func TestDocsPipelineExample(t *testing.T) {
	t.Parallel()
	dir, cfg, example := docExample(t, "docs/pipelines.md", "## Pipelines: runs that depend on runs")
	writeFile(t, cfg, example)
	if r := run(t, dir, "fmt", "--check", cfg); r.code != 0 {
		t.Errorf("the example is not canonically formatted (sanddune fmt):\n%s%s", r.stdout, r.stderr)
	}
	writeFile(t, cfg, "sandbox \"local\" \"dev\" {}\nagent \"command\" \"a\" { command = [\"true\"] }\n"+example)
	writeFile(t, filepath.Join(dir, ".sanddune", "plan.md"), "Plan; answer <plan>{...}</plan>.\n")
	writeFile(t, filepath.Join(dir, ".sanddune", "implement.md"), "Implement {{ID}}.\n")
	writeFile(t, filepath.Join(dir, ".sanddune", "merge.md"), "Merge {{BRANCHES}}; conflicts: {{CONFLICTS}}.\n")
	if r := run(t, dir, "validate"); r.code != 0 {
		t.Errorf("the example does not validate:\n%s%s", r.stdout, r.stderr)
	}
}

// TestDocsSessionAndDockerExamples keeps the session example and the
// README's docker + claude example true: canonically formatted and valid
// (with the providers they refer to).
func TestDocsSessionAndDockerExamples(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ file, heading, providers string }{
		{"docs/pipelines.md", "## Sessions: steps in one sandbox", "sandbox \"docker\" \"default\" {}\nagent \"claude\" \"opus\" {\n  model = \"claude-opus-4-5\"\n}\n"},
		{"README.md", "## A real example: Docker and Claude", ""},
	} {
		dir, cfg, example := docExample(t, tc.file, tc.heading)
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

// TestDocsHCLBlocksAreCanonical checks every hcl block of the README and
// of docs/*.md: it parses and is as `sanddune fmt` writes it.
func TestDocsHCLBlocksAreCanonical(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := 0
	for _, f := range append(files, "../../README.md") {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range hclBlock.FindAllSubmatch(src, -1) {
			blocks++
			name := fmt.Sprintf("%s hcl block %d", filepath.Base(f), i+1)
			out, diags := config.Format(m[1], name+".hcl")
			if diags.HasErrors() {
				t.Errorf("%s does not parse: %s", name, diags.Error())
			} else if string(out) != string(m[1]) {
				t.Errorf("%s is not canonically formatted (sanddune fmt); want:\n%s", name, out)
			}
		}
	}
	if blocks == 0 {
		t.Fatal("no hcl block found in README.md and docs/*.md")
	}
}

var hclBlock = regexp.MustCompile("(?sm)^```hcl\n(.*?)^```")

// docExample is the first hcl block under heading in file (relative to
// the repository root), and a repo with a config path to write it to.
func docExample(t *testing.T, file, heading string) (dir, cfg, example string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("../..", file))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("no heading %q in %s", heading, file)
	}
	m := hclBlock.FindStringSubmatch(after)
	if m == nil {
		t.Fatalf("no hcl block under %s in %s", heading, file)
	}
	dir = gitRepo(t)
	return dir, filepath.Join(dir, ".sanddune", "sanddune.hcl"), m[1]
}
