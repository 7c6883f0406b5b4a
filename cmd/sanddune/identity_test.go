package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/missingstudio/sanddune/internal/kittest"
)

// TestBindMountGitIdentity: in a bind-mount sandbox (bubblewrap) a commit
// carries the host's identity (from the host's global git config, which
// the sandbox does not see), and an agent that names its own identity
// (`git -c user.name=…`) keeps it.
func TestBindMountGitIdentity(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("bwrap")
	kittest.RequireEngine(t, "bubblewrap", err)
	dir := gitRepo(t)
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".gitconfig"), "[user]\n\tname = Host Person\n\temail = host@example.com\n")
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "bubblewrap" "b" {
  network = "none"
}
agent "command" "c" {
  command = ["sh", "-c", "cat >/dev/null; echo 1 > a; git add a; git commit -qm host; echo 2 > b; git add b; git -c user.name=Agent -c user.email=agent@example.com commit -qm own; echo '<promise>COMPLETE</promise>'"]
}
run "id" {
  prompt          = "x"
  branch_strategy = { type = "branch", branch = "agent/id" }
}
`)
	cmd := sandduneCmd(dir, "run")
	cmd.Env = append(cmd.Env, "HOME="+home)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if got := gitOut(t, dir, "log", "--format=%s|%an <%ae>|%cn", "main..agent/id"); got != "own|Agent <agent@example.com>|Agent\nhost|Host Person <host@example.com>|Host Person" {
		t.Fatalf("commits:\n%s", got)
	}
}
