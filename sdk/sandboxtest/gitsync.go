package sandboxtest

import (
	"context"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/plugintest"
)

// testGitBundleRoundTrip: an isolated sandbox gets its code as a git
// bundle and gives commits back as one (docs/adr/0004), so the sandbox
// needs git, and CopyIn/CopyOut must carry bundles intact: a commit made in
// the sandbox arrives on the host with the same SHA.
func (s *suite) testGitBundleRoundTrip(t plugintest.T) {
	if s.caps.Contract != sdk.ContractIsolated {
		t.Skipf("bind-mount provider: the worktree is mounted, not synced")
	}
	hostGit := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=sandboxtest", "-c", "user.email=sandboxtest@example.com"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v on the host (the kit needs git): %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	host := t.TempDir()
	hostGit(host, "init", "-q", "-b", "main")
	hostGit(host, "commit", "-q", "--allow-empty", "-m", "base")
	base := hostGit(host, "rev-parse", "HEAD")
	in := filepath.Join(t.TempDir(), "in.bundle")
	hostGit(host, "bundle", "create", "-q", in, "refs/heads/main")

	sb, _, _ := s.create(t)
	defer sb.Close(context.Background())
	git := func(args ...string) string {
		t.Helper()
		req := sdk.ExecRequest{Argv: append([]string{"git", "-c", "user.name=sandbox", "-c", "user.email=sandbox@example.com"}, args...)}
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		var out, errb strings.Builder
		res, err := sb.Exec(ctx, req, func(l sdk.OutputLine) {
			w := &out
			if l.Stream == sdk.Stderr {
				w = &errb
			}
			w.Write(l.Text)
			if !l.Partial {
				w.WriteByte('\n')
			}
		})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("git %v in the sandbox: %+v %v\n%s", args, res, err, errb.String())
		}
		return strings.TrimSpace(out.String())
	}
	if r := s.exec(context.Background(), sh(`command -v git >/dev/null && echo yes`), nil); strings.Join(r.stdout, "") != "yes" {
		t.Fatalf("git is missing in the sandbox: sanddune syncs an isolated sandbox's code in and its commits out as git bundles, so the sandbox needs git")
	}
	git("init", "-q")
	git("symbolic-ref", "HEAD", "refs/heads/main")
	sbBundle := path.Join(git("rev-parse", "--absolute-git-dir"), "sandboxtest-in.bundle")
	if err := copyInto(sb, in, sbBundle); err != nil {
		t.Fatalf("CopyIn of the bundle: %v", err)
	}
	git("fetch", "-q", "--no-tags", "--update-head-ok", sbBundle, "+refs/heads/main:refs/heads/main")
	git("reset", "-q", "--hard", "HEAD")
	if head := git("rev-parse", "HEAD"); head != base {
		t.Fatalf("sandbox HEAD %s after sync in, want %s", head, base)
	}
	git("commit", "-q", "--allow-empty", "-m", "made in the sandbox")
	made := git("rev-parse", "HEAD")
	outBundle := path.Join(path.Dir(sbBundle), "sandboxtest-out.bundle")
	git("bundle", "create", "-q", outBundle, base+"..HEAD")
	out := filepath.Join(t.TempDir(), "out.bundle")
	if err := copyOutOf(sb, outBundle, out); err != nil {
		t.Fatalf("CopyOut of the bundle: %v", err)
	}
	hostGit(host, "fetch", "-q", "--no-tags", out, "HEAD")
	if got := hostGit(host, "rev-parse", "FETCH_HEAD"); got != made {
		t.Errorf("the host fetched %s from the sandbox's bundle, want the sandbox's commit %s", got, made)
	}
}
