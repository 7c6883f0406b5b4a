package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/internal/kittest"
)

// TestQuickStart runs the README's quick start, examples/quickstart, in a
// fresh repo: a commit lands on sanddune/quickstart with the rendered
// prompt, and the working tree is untouched.
func TestQuickStart(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("bwrap")
	kittest.RequireEngine(t, "bubblewrap", err)
	dir := gitRepo(t)
	for _, f := range []string{"sanddune.hcl", "prompt.md"} {
		b, err := os.ReadFile(filepath.Join("../../examples/quickstart", f))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "examples/quickstart", f), string(b))
	}
	r := run(t, dir, "run", "-c", "examples/quickstart/sanddune.hcl")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	note := gitOut(t, dir, "show", "sanddune/quickstart:.sanddune-quickstart/NOTE.md")
	for _, want := range []string{"# Hello from sanddune", "on branch sanddune/quickstart", "started from main"} {
		if !strings.Contains(note, want) {
			t.Errorf("NOTE.md lacks %q:\n%s", want, note)
		}
	}
	if st := gitOut(t, dir, "status", "--porcelain"); st != "?? examples/" {
		t.Errorf("working tree changed: %q", st)
	}
}

// TestEventsFile checks --events: one JSON object per agent event, with
// type, run, iteration, timestamp and payload.
func TestEventsFile(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "script" {
  command = `+commitAgent+`
}
run "ev" {
  prompt = "hi"
}
`)
	events := filepath.Join(t.TempDir(), "events.jsonl")
	if r := run(t, dir, "run", "--events", events); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	f, err := os.Open(events)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var n int
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		var e map[string]any
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %d is not JSON: %v", n+1, err)
		}
		for _, k := range []string{"type", "run", "iteration", "timestamp", "payload"} {
			if _, ok := e[k]; !ok {
				t.Errorf("event %d lacks %q: %s", n+1, k, sc.Text())
			}
		}
		if e["type"] == "text" && e["run"] != "ev" {
			t.Errorf("event %d: run %v", n+1, e["run"])
		}
	}
	if n == 0 {
		t.Fatal("no events written")
	}
}

// TestEventsFileFailing: an --events file that cannot be written is warned
// about once on stderr; the run carries on and its exit code is its own.
func TestEventsFileFailing(t *testing.T) {
	dir := gitRepo(t)
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "script" {
  command = `+commitAgent+`
}
run "ev" {
  prompt = "hi"
}
`)
	r := run(t, dir, "run", "--events", "/dev/full")
	if r.code != 0 || strings.Count(r.stderr, "warning: --events /dev/full: ") != 1 || !strings.Contains(r.stderr, "no space left on device") {
		t.Fatalf("exit %d, want 0 with one warning naming the file and the error:\n%s", r.code, r.stderr)
	}
	if s := gitOut(t, dir, "log", "-1", "--format=%s"); s != "agent: save prompt" {
		t.Fatalf("the run did not carry on: HEAD is %q", s)
	}
}
