//go:build e2ek8s

// Built only by make e2e-k8s (-tags e2ek8s), so client-go stays out of the
// ordinary cmd/sanddune test binary.

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/core/gc"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// kubernetesBlock is a sandbox block for the real cluster of the e2e suite
// (make e2e-k8s), or skips without one.
func kubernetesBlock(t *testing.T, extra string) string {
	t.Helper()
	return `sandbox "kubernetes" "default" {
` + kubernetesBody(t) + extra + `}
`
}

// kubernetesBody is the body of such a block.
func kubernetesBody(t *testing.T) string {
	t.Helper()
	if os.Getenv("SANDDUNE_K8S_E2E") != "1" {
		t.Skip("SKIPPED: no real cluster (set SANDDUNE_K8S_E2E=1 and KUBECONFIG, or run make e2e-k8s)")
	}
	image := os.Getenv("SANDDUNE_K8S_IMAGE")
	if image == "" {
		image = testImage()
	}
	body := fmt.Sprintf("  image             = %q\n  image_pull_policy = \"IfNotPresent\"\n", image)
	if n := os.Getenv("SANDDUNE_K8S_NODE"); n != "" {
		body += fmt.Sprintf("  node_name         = %q\n", n)
	}
	return body
}

// TestKubernetesEgressEndToEnd: egressEndToEnd on the real cluster, whose
// pods see this machine at SANDDUNE_K8S_HOST_IP (k8s-up.sh: the address
// of its pod bridge).
func TestKubernetesEgressEndToEnd(t *testing.T) {
	body := kubernetesBody(t)
	gw := os.Getenv("SANDDUNE_K8S_HOST_IP")
	if gw == "" {
		t.Fatal("SANDDUNE_K8S_HOST_IP is not set: the address of this machine the cluster's pods reach (scripts/k8s-up.sh exports it)")
	}
	egressEndToEnd(t, "kubernetes", body, gw, podsOf)
}

// podsOf lists the sandbox pods (namespace/name) of the runs in the repo
// dir that are not being deleted: in every namespace, or in the context's
// when the credentials may only see that one (the Role of rbac.yaml).
func podsOf(t *testing.T, dir string) []string {
	t.Helper()
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), nil)
	rc, err := cc.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	opts := metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=sanddune"}
	l, err := cs.CoreV1().Pods("").List(context.Background(), opts)
	if apierrors.IsForbidden(err) {
		ns, _, _ := cc.Namespace()
		l, err = cs.CoreV1().Pods(ns).List(context.Background(), opts)
	}
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	var out []string
	for _, p := range l.Items {
		var labels map[string]string
		_ = json.Unmarshal([]byte(p.Annotations["sanddune.dev/labels"]), &labels)
		if p.DeletionTimestamp == nil && labels[gc.LabelRepo] == dir {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	return out
}

func TestKubernetesRunLandsCommitsAndLeavesNoPod(t *testing.T) {
	block := kubernetesBlock(t, "")
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), block+`agent "command" "script" {
  command = `+commitAgent+`
}
run "merge" {
  prompt          = "via a temp branch"
  branch_strategy = { type = "merge-to-head" }
}
run "named" {
  prompt          = "onto a named branch"
  branch_strategy = { type = "branch", branch = "agent/named" }
}
run "failing" {
  prompt          = "fails"
  max_iterations  = 1
  branch_strategy = { type = "branch", branch = "agent/failing" }
}
`)
	r := run(t, dir, "run", "--json", "merge", "named")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var doc struct {
		Runs []struct {
			Branch  string
			Commits []struct{ SHA string }
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Runs) != 2 {
		t.Fatalf("json: %v\n%s", err, r.stdout)
	}
	if got := gitOut(t, dir, "show", "main:prompt.txt"); got != "via a temp branch" {
		t.Errorf("merge-to-head: main:prompt.txt = %q", got)
	}
	named := doc.Runs[1]
	if named.Branch != "agent/named" || len(named.Commits) != 1 || gitOut(t, dir, "rev-parse", "agent/named") != named.Commits[0].SHA {
		t.Errorf("branch run: %+v, want its commit, with the sandbox's SHA, at the tip of agent/named", named)
	}
	if p := podsOf(t, dir); len(p) != 0 {
		t.Errorf("pods left after success: %v", p)
	}
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), block+`agent "command" "fail" {
  command = ["sh", "-c", "echo failing >&2; exit 3"]
}
run "failing" {
  prompt          = "fails"
  branch_strategy = { type = "branch", branch = "agent/failing" }
}
`)
	if r := run(t, dir, "run", "failing"); r.code == 0 {
		t.Errorf("a failing agent's run exited 0\n%s", r.stderr)
	}
	if p := podsOf(t, dir); len(p) != 0 {
		t.Errorf("pods left after failure: %v", p)
	}
}

// startHanging starts a run whose agent commits, prints "started" and
// hangs, and waits for "started".
func startHanging(t *testing.T, dir, block string) *exec.Cmd {
	t.Helper()
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), block+`agent "command" "hang" {
  command = ["sh", "-c", "echo work > work.txt && git add work.txt && git -c user.name=a -c user.email=a@example.com commit -qm 'agent: work' && echo wip > wip.txt && echo started && exec sleep 1000"]
}
run "orphan" {
  prompt          = "wait"
  branch_strategy = { type = "branch", branch = "agent/hang" }
  logging {
    type = "stdout"
  }
}
`)
	cmd := sandduneCmd(dir, "run")
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	started := false
	for !started && sc.Scan() {
		started = strings.Contains(sc.Text(), "started")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if !started {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the agent did not start:\n%s", stderr.String())
	}
	return cmd
}

func TestKubernetesInterruptLeavesNoPod(t *testing.T) {
	block := kubernetesBlock(t, "")
	dir := gitRepo(t)
	cmd := startHanging(t, dir, block)
	if len(podsOf(t, dir)) != 1 {
		t.Fatal("no pod while the agent runs")
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130", err)
	}
	if p := podsOf(t, dir); len(p) != 0 {
		t.Fatalf("pods left after SIGINT: %v", p)
	}
	if got := gitOut(t, dir, "show", "agent/hang:work.txt"); got != "work" {
		t.Fatalf("the agent's commit was lost: %q", got)
	}
}

func TestKubernetesGCSalvagesAKilledRun(t *testing.T) {
	block := kubernetesBlock(t, "")
	dir := gitRepo(t)
	cmd := startHanging(t, dir, block)
	cmd.Process.Kill()
	cmd.Wait()
	pods := podsOf(t, dir)
	if len(pods) != 1 {
		t.Fatalf("want the killed run's pod left, found %v", pods)
	}
	// gc finds the pod through the block's config in the file -c names
	// (the namespace: the runner's pass has only its own, "agents").
	cfg := filepath.Join(dir, "ci", "k8s.hcl")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, ".sanddune", "sanddune.hcl"), cfg); err != nil {
		t.Fatal(err)
	}
	r := run(t, dir, "gc", "-c", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "salvaged from "+pods[0]) || !strings.Contains(r.stdout, "removed "+pods[0]) {
		t.Fatalf("gc: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := gitOut(t, dir, "show", "agent/hang:work.txt"); got != "work" {
		t.Errorf("the killed run's commit was not salvaged: %q", got)
	}
	patches, _ := filepath.Glob(filepath.Join(dir, ".sanddune", "patches", "*.patch"))
	if len(patches) != 1 {
		t.Errorf("uncommitted work not saved as a patch: %v", patches)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for len(podsOf(t, dir)) != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Second) // graceful deletion
	}
	if p := podsOf(t, dir); len(p) != 0 {
		t.Errorf("pods left after gc: %v", p)
	}
}
