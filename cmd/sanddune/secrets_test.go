package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretsNeverReachTheSinks: values of every env layer (.sanddune/.env,
// the sandbox's and the agent's blocks, the run's) that the agent, a hook
// and a failing agent's stderr print
// are redacted in the log file, --json (stdout and error), --events (both
// files mode 0600) and the terminal; a key the run lists in show_env is shown.
func TestSecretsNeverReachTheSinks(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	const dotSecret, runSecret, shown = "dotenv-s3cr3t-value", "run-s3cr3t-value", "visible-level"
	const sbSecret, agentSecret = "sandbox-s3cr3t-value", "agent-s3cr3t-value"
	writeFile(t, filepath.Join(dir, ".sanddune/.env"), "DOT_SECRET="+dotSecret+"\n")
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {
  env = { SB_SECRET = "`+sbSecret+`" }
}
agent "command" "leaky" {
  command = ["sh", "-c", "echo text $DOT_SECRET $LOG_LEVEL $SB_SECRET $AGENT_SECRET; echo stderr $RUN_SECRET $AGENT_SECRET >&2; exit 3"]
  env     = { AGENT_SECRET = "`+agentSecret+`" }
}
run "leaky" {
  prompt   = "x"
  env      = { RUN_SECRET = "`+runSecret+`", LOG_LEVEL = "`+shown+`" }
  show_env = ["LOG_LEVEL"]
  hooks {
    sandbox {
      on_sandbox_ready {
        command = "echo hook $RUN_SECRET $DOT_SECRET"
      }
    }
  }
}
`)
	events := filepath.Join(t.TempDir(), "events.jsonl")
	r := run(t, dir, "run", "--json", "--events", events)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, ".sanddune/logs/*.log"))
	if len(logs) != 1 {
		t.Fatalf("log files: %v", logs)
	}
	for _, f := range []string{logs[0], events} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", f, fi.Mode().Perm(), err)
		}
	}
	logData, _ := os.ReadFile(logs[0])
	eventData, _ := os.ReadFile(events)
	sinks := map[string]string{"stdout (--json)": r.stdout, "stderr": r.stderr, "log file": string(logData), "--events": string(eventData)}
	for name, text := range sinks {
		for _, secret := range []string{dotSecret, runSecret, sbSecret, agentSecret} {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds the secret %q:\n%s", name, secret, text)
			}
		}
	}
	// What was redacted is still said, by key.
	for name, want := range map[string]string{
		"log file":        "hook [redacted RUN_SECRET] [redacted DOT_SECRET]",
		"--events":        "text [redacted DOT_SECRET] " + shown + " [redacted SB_SECRET] [redacted AGENT_SECRET]",
		"stdout (--json)": "stderr [redacted RUN_SECRET] [redacted AGENT_SECRET]",
	} {
		if !strings.Contains(sinks[name], want) {
			t.Errorf("%s lacks %q:\n%s", name, want, sinks[name])
		}
	}
}

// TestSecretsRedactedInSessionSteps: a session step's env and a
// session's env are redacted in --json (each step's stdout and error) and
// the terminal, like a run's.
func TestSecretsRedactedInSessionSteps(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t)
	const sessionSecret, stepSecret = "session-s3cr3t-value", "step-s3cr3t-value"
	writeFile(t, filepath.Join(dir, ".sanddune/sanddune.hcl"), `sandbox "local" "dev" {}
agent "command" "talk" {
  command = ["sh", "-c", "echo said $SESSION_SECRET"]
}
agent "command" "leaky" {
  command = ["sh", "-c", "echo text $SESSION_SECRET $STEP_SECRET; echo stderr $STEP_SECRET >&2; exit 3"]
}
session "pair" {
  sandbox         = sandbox.local.dev
  branch_strategy = { type = "branch", branch = "agent/pair" }
  env             = { SESSION_SECRET = "`+sessionSecret+`" }
  step "talk" {
    agent  = agent.command.talk
    prompt = "x"
  }
  step "leak" {
    agent  = agent.command.leaky
    prompt = "x"
    env    = { STEP_SECRET = "`+stepSecret+`" }
  }
}
`)
	r := run(t, dir, "run", "--json", "pair")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	for name, text := range map[string]string{"stdout (--json)": r.stdout, "stderr": r.stderr} {
		for _, secret := range []string{sessionSecret, stepSecret} {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds the secret %q:\n%s", name, secret, text)
			}
		}
	}
	for _, want := range []string{"said [redacted SESSION_SECRET]", "stderr [redacted STEP_SECRET]"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--json lacks %q:\n%s", want, r.stdout)
		}
	}
}
