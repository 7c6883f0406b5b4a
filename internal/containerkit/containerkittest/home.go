package containerkittest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/containerkit"
	"github.com/missingstudio/sanddune/internal/kittest"
	"github.com/missingstudio/sanddune/sdk"
)

// Home checks, for user 1000:1001 after preflight, that the agent home is
// left as the image has it when the image gives it to that user (its mode
// 0700 kept: no archive was extracted), and made as before (0755) when the
// image's home belongs to root, is missing, or lacks the parent of a bind
// target, the agent writing it in every case. The fact is learnt once per
// image and directory set: kept in the provider and in the user's cache
// directory (a second provider reads it without probing, a corrupt entry
// is probed again). c.File and c.Args build the images. Serial: it sets
// XDG_CACHE_HOME.
func Home(t *testing.T, e Engine, c BuildImageCase) {
	e.Config(t, nil) // stops the test without the engine
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	ctx := context.Background()
	own := buildImage(t, e, c, "RUN mkdir -p /home/agent/.cfg && chown -R ${AGENT_UID}:${AGENT_GID} /home/agent && chmod 0700 /home/agent /home/agent/.cfg")
	missing := buildImage(t, e, c, "RUN rm -rf /home/agent")
	bind := func(target string) func(*sdk.CreateRequest) {
		return func(r *sdk.CreateRequest) {
			r.GitMounts = []sdk.Mount{{HostPath: t.TempDir(), SandboxPath: target}}
		}
	}
	// home lists ~, ~/.cfg and ~/.none where they exist, with their owner
	// and mode, once the agent wrote a file in each.
	home := func(p sdk.SandboxProvider, image string, mod func(*sdk.CreateRequest)) string {
		t.Helper()
		cfg := e.Config(t, map[string]cty.Value{"image": cty.StringVal(image)})
		sb, req := createWith(t, p, e, cfg, func(r *sdk.CreateRequest) {
			r.HostUID, r.HostGID = 1000, 1001
			if mod != nil {
				mod(r)
			}
			if err := p.Preflight(ctx, sdk.PreflightRequest{Config: cfg, HostRepoPath: r.HostRepoPath, HostUID: 1000, HostGID: 1001}); err != nil {
				t.Fatalf("preflight: %v", err)
			}
		})
		defer func() { must(t, sb.Close(ctx)) }()
		_ = os.Chmod(req.WorktreePath, 0o777) // t.TempDir is 0700: open it for the test UID
		res, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: `for d in ~ ~/.cfg ~/.none; do
			[ -d "$d" ] || continue
			touch "$d/ok" || exit 1
			echo "~${d#$HOME} $(stat -c '%u:%g %a' "$d")"
		done`})
		if res.ExitCode != 0 {
			t.Fatalf("the agent cannot write its home: exit %d %q", res.ExitCode, o.Stderr)
		}
		return strings.Join(o.Stdout, ", ")
	}
	facts := filepath.Join(cache, "sanddune", "home")
	entries := func() []string {
		des, _ := os.ReadDir(facts)
		var names []string
		for _, de := range des {
			names = append(names, de.Name())
		}
		return names
	}
	check := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s: home %q, want %q", what, got, want)
		}
	}
	kept, made := "~ 1000:1001 700, ~/.cfg 1000:1001 700", "~ 1000:1001 755, ~/.cfg 1000:1001 700"

	p := e.New()
	check("image with the user's home", home(p, own, nil), kept)
	learnt := entries()
	if len(learnt) != 1 {
		t.Fatalf("cache entries after one image: %v", learnt)
	}
	check("the same image again", home(p, own, nil), kept)

	entry := filepath.Join(facts, learnt[0])
	must(t, os.WriteFile(entry, []byte("prepare\n"), 0o600))
	check("a new provider told by the cache to prepare", home(e.New(), own, nil), made)

	must(t, os.WriteFile(entry, []byte("{corrupt"), 0o600))
	p = e.New()
	check("a corrupt cache entry", home(p, own, nil), kept)
	if b, err := os.ReadFile(entry); err != nil || string(b) != "fits\n" {
		t.Errorf("cache entry after a corrupt one: %q %v", b, err)
	}

	check("a bind under a directory the image has", home(p, own, bind(containerkit.HomeDir+"/.cfg/sub")), kept)
	check("a bind under a directory the image lacks", home(p, own, bind(containerkit.HomeDir+"/.none/sub")),
		made+", ~/.none 1000:1001 755")
	check("a home of root", home(p, Image(), nil), "~ 1000:1001 755")
	check("no home", home(p, missing, nil), "~ 1000:1001 755")
	if got := entries(); len(got) != 5 || !slices.Contains(got, learnt[0]) {
		t.Errorf("cache entries for five facts: %v", got)
	}
}

// buildImage builds, with build-image as user 1000:1001, the test image
// with step, removed at cleanup.
func buildImage(t *testing.T, e Engine, c BuildImageCase, step string) string {
	t.Helper()
	p := e.New().(sdk.CommandProvider)
	repo := t.TempDir()
	image := "sanddune:home-" + containerkit.RandomHex(3)
	kittest.WriteFile(t, filepath.Join(repo, ".sanddune", c.File), fmt.Sprintf(
		"FROM %s\nARG AGENT_UID=1\nARG AGENT_GID=1\n%s\nUSER ${AGENT_UID}:${AGENT_GID}\n", Image(), step), 0o644)
	var lines []string
	code, err := p.RunCommand(context.Background(), sdk.RunCommandRequest{Name: "build-image", Args: append([]string{"--image-name", image}, c.Args...),
		Cwd: repo, HostRepoPath: repo, HostUID: 1000, HostGID: 1001}, func(l sdk.OutputLine) { lines = append(lines, string(l.Text)) })
	if err != nil || code != 0 {
		t.Fatalf("build-image: %d %v\n%s", code, err, strings.Join(lines, "\n"))
	}
	t.Cleanup(func() {
		_, _ = p.RunCommand(context.Background(), sdk.RunCommandRequest{Name: "remove-image", Args: []string{"--image-name", image}}, func(sdk.OutputLine) {})
	})
	return image
}
