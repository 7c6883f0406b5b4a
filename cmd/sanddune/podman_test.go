package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/internal/kittest"
)

// podmanHost is what a podman sandbox block needs on this machine: the
// settings `sanddune run`'s own preflight names when podman's defaults
// cannot start a container here (e.g. runtime = "runc" where crun fails on
// hybrid cgroups), found once per test binary.
var podmanHost struct {
	once     sync.Once
	settings string
	err      error
}

// requirePodman returns the sandbox block body for the test image on this
// machine, or stops the test when podman or its test image is missing: a
// failure in CI, a loud skip elsewhere.
func requirePodman(t *testing.T) string {
	t.Helper()
	podmanHost.once.Do(func() { podmanHost.settings, podmanHost.err = detectPodman(t.TempDir()) })
	kittest.RequireEngine(t, "podman", podmanHost.err)
	return fmt.Sprintf("  image = %q\n%s", testImage(), podmanHost.settings)
}

func detectPodman(dir string) (string, error) {
	if out, err := exec.Command("podman", "image", "exists", testImage()).CombinedOutput(); err != nil {
		return "", fmt.Errorf("podman or its image %s is not available (run scripts/ci-setup.sh as root): %v: %s", testImage(), err, bytes.TrimSpace(out))
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("git %v: %v: %s", args, err, out)
		}
	}
	cfg := fmt.Sprintf("sandbox \"podman\" \"default\" {\n  image = %q\n}\nagent \"command\" \"a\" {\n  command = [\"true\"]\n}\nrun \"probe\" {\n  prompt = \"x\"\n}\n", testImage())
	if err := os.WriteFile(filepath.Join(dir, "probe.hcl"), []byte(cfg), 0o644); err != nil {
		return "", err
	}
	cmd := sandduneCmd(dir, "run", "-c", "probe.hcl")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		return "", nil
	}
	_, after, ok := strings.Cut(stderr.String(), "set them in the sandbox block:\n")
	if !ok {
		return "", fmt.Errorf("a podman run with default settings failed, and preflight named no settings:\n%s", stderr.String())
	}
	var settings strings.Builder
	for _, line := range strings.Split(after, "\n") {
		if !strings.HasPrefix(line, "  ") || !strings.Contains(line, " = ") {
			break
		}
		settings.WriteString(line + "\n")
	}
	return settings.String(), nil
}

// podmanContainers lists the containers of runs in the repo dir.
func podmanContainers(t *testing.T, dir string) []string {
	t.Helper()
	out, err := exec.Command("podman", "ps", "-aq", "--filter", "label=sanddune.repo="+dir).Output()
	if err != nil {
		t.Fatalf("podman ps: %v", err)
	}
	return strings.Fields(string(out))
}

// TestPodmanRunLandsCommitsForEveryStrategy: runsLandCommits in podman.
func TestPodmanRunLandsCommitsForEveryStrategy(t *testing.T) {
	t.Parallel()
	runsLandCommits(t, `sandbox "podman" "default" {
`+requirePodman(t)+`}`, podmanContainers)
}

// TestPodmanFailedRunLeavesNoContainer: a run whose agent fails leaves no
// container.
func TestPodmanFailedRunLeavesNoContainer(t *testing.T) {
	t.Parallel()
	block := requirePodman(t)
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "podman" "default" {
`+block+`}
agent "command" "fail" {
  command = ["sh", "-c", "echo broken >&2; exit 3"]
}
run "fail" {
  prompt          = "fail"
  branch_strategy = { type = "branch", branch = "agent/fail" }
}
`)
	if r := run(t, dir, "run"); r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	if c := podmanContainers(t, dir); len(c) != 0 {
		t.Fatalf("containers left behind: %v", c)
	}
}

// TestPodmanInterruptLeavesNoContainer: interruptLeavesNoContainer in
// podman, and no process of the container (conmon, podman exec clients) is
// left either.
func TestPodmanInterruptLeavesNoContainer(t *testing.T) {
	t.Parallel()
	interruptLeavesNoContainer(t, `sandbox "podman" "default" {
`+requirePodman(t)+`}`, podmanContainers, func(id string) func() {
		full := podmanID(t, id)
		if len(processesMentioning(full)) == 0 {
			t.Fatalf("no host process mentions container %s while it runs (test is void)", full)
		}
		return func() { noProcessesLeft(t, full) }
	})
}

// podmanID is the full id of a container.
func podmanID(t *testing.T, id string) string {
	t.Helper()
	out, err := exec.Command("podman", "inspect", "--format", "{{.Id}}", id).Output()
	if err != nil {
		t.Fatalf("podman inspect: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestPodmanGCRemovesWhatAKilledRunLeft kills sanddune outright while its
// agent runs in a podman container; `sanddune gc` then removes the
// container (found by its labels) and every process of it. Serial: gc
// removes every orphan on the host, and the package's parallel tests must
// not race it for this one.
func TestPodmanGCRemovesWhatAKilledRunLeft(t *testing.T) {
	block := requirePodman(t)
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "podman" "default" {
`+block+`}
agent "command" "hang" {
  command = ["sh", "-c", "echo started && exec sleep 1000"]
}
run "orphan" {
  prompt          = "wait"
  branch_strategy = { type = "branch", branch = "agent/orphan" }
  logging {
    type = "stdout"
  }
}
`)
	signalWhenStarted(t, dir, syscall.SIGKILL)
	ids := podmanContainers(t, dir)
	if len(ids) != 1 {
		t.Fatalf("want the killed run's container left, found %v", ids)
	}
	full := podmanID(t, ids[0])
	r := run(t, dir, "gc")
	if r.code != 0 || !strings.Contains(r.stdout, "sandbox podman: removed "+full) {
		t.Fatalf("gc: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if c := podmanContainers(t, dir); len(c) != 0 {
		t.Fatalf("containers left after gc: %v", c)
	}
	noProcessesLeft(t, full)
}

// noProcessesLeft fails when processes of container id outlive it. Podman's
// own conmon and the `podman container cleanup` it starts as the container's
// exit command go on their own a moment after the removal returns (longer on
// a loaded machine), so they are waited for; only one that stays is a leak.
func noProcessesLeft(t *testing.T, id string) {
	t.Helper()
	ps := processesMentioning(id)
	for deadline := time.Now().Add(2 * time.Minute); len(ps) != 0 && time.Now().Before(deadline); ps = processesMentioning(id) {
		time.Sleep(100 * time.Millisecond)
	}
	if len(ps) != 0 {
		t.Fatalf("processes of container %s still there 2 min after its removal: %q", id, ps)
	}
}

// processesMentioning lists the command lines of host processes that
// mention s.
func processesMentioning(s string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err == nil && bytes.Contains(b, []byte(s)) {
			out = append(out, string(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
		}
	}
	return out
}
