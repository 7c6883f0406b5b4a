package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestInitCopilotAndCursorWriteAConfigThatValidates: init with each of the
// agents whose CLI install differs writes its install line and credential,
// and the config validates once the credential is set (and names it
// while it is not).
func TestInitCopilotAndCursorWriteAConfigThatValidates(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ agent, credential, install string }{
		{"copilot", "COPILOT_GITHUB_TOKEN", "RUN npm install -g @github/copilot\n"},
		{"cursor", "CURSOR_API_KEY", "curl -fsS https://cursor.com/install | HOME=/opt/cursor bash"},
	} {
		t.Run(c.agent, func(t *testing.T) {
			t.Parallel()
			dir := gitRepo(t)
			if r := run(t, dir, initFlagsFor("blank", c.agent, "docker", "github-issues")...); r.code != 0 {
				t.Fatalf("init: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			cfg := filepath.Join(dir, ".sanddune")
			env, _ := os.ReadFile(filepath.Join(cfg, ".env.example"))
			if !strings.Contains(string(env), "\n"+c.credential+"=\n") {
				t.Errorf(".env.example lacks %s=:\n%s", c.credential, env)
			}
			if image, _ := os.ReadFile(filepath.Join(cfg, "Dockerfile")); !strings.Contains(string(image), c.install) {
				t.Errorf("Dockerfile lacks %q:\n%s", c.install, image)
			}
			bare := slices.DeleteFunc(sandduneCmd(dir).Env, func(kv string) bool {
				return strings.HasPrefix(kv, "COPILOT_") || strings.HasPrefix(kv, "GH_TOKEN=") || strings.HasPrefix(kv, "GITHUB_TOKEN=") || strings.HasPrefix(kv, "CURSOR_")
			})
			cmd := sandduneCmd(dir, "validate")
			cmd.Env = bare
			if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), c.credential) {
				t.Errorf("validate without %s: %v\n%s", c.credential, err, out)
			}
			cmd = sandduneCmd(dir, "validate")
			cmd.Env = append(bare, c.credential+"=test-key")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("validate: %v\n%s\n%s", err, out, readAll(t, cfg))
			}
		})
	}
}
