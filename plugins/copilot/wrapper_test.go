package copilot

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// stubCLI stands in for copilot: it appends a usage record to its session's
// event log (the --session-id or --resume one), prints a result line and
// waits for $1 seconds or a signal.
const stubCLI = `#!/bin/sh
wait=$1
shift
for a; do
	case "$a" in --session-id=*) sid=${a#--session-id=} ;; --resume=*) sid=${a#--resume=} ;; esac
done
dir="$HOME/.copilot/session-state/$sid"
mkdir -p "$dir"
echo '{"type":"session.usage_record","data":{"usage":{"inputTokens":7,"outputTokens":1}}}' >> "$dir/events.jsonl"
echo '{"type":"result","sessionId":"'"$sid"'","exitCode":0}'
sleep "$wait" &
wait
`

// wrapper runs the print-mode wrapper around the stub as the host would,
// in a process group of its own, for session id (resumed, as BuildCommand
// does, when not "").
func wrapper(t *testing.T, home, id string, wait string) *exec.Cmd {
	t.Helper()
	stub := filepath.Join(t.TempDir(), "copilot")
	if err := os.WriteFile(stub, []byte(stubCLI), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"-c", withUsage, "sh", id, stub, wait}
	if id != "" {
		args = append(args, "--resume="+id)
	}
	cmd := exec.Command("sh", args...)
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// TestWrapperPrintsTheIterationsUsageRecords: a new session gets a fresh
// UUID and its records are printed after the CLI's lines; a resumed
// session prints only the records its iteration added.
func TestWrapperPrintsTheIterationsUsageRecords(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	out, err := wrapper(t, home, "", "0").Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"type":"result"`) || !strings.Contains(lines[1], "session.usage_record") {
		t.Fatalf("want the result line, then one usage record:\n%s", out)
	}
	id := strings.TrimPrefix(lines[0], `{"type":"result","sessionId":"`)[:36]
	if out, err = wrapper(t, home, id, "0").Output(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(out), "session.usage_record"); n != 1 {
		t.Fatalf("resumed session: %d usage records printed, want its own one:\n%s", n, out)
	}
}

// TestWrapperPrintsUsageAfterAStop: SIGTERM to the process group stops
// the CLI; the wrapper still prints the records and exits with the CLI's
// status.
func TestWrapperPrintsUsageAfterAStop(t *testing.T) {
	t.Parallel()
	cmd := wrapper(t, t.TempDir(), "", "60")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The result line says the stub wrote its record and is waiting.
	r := bufio.NewReader(stdout)
	if first, err := r.ReadString('\n'); err != nil || !strings.Contains(first, `"type":"result"`) {
		t.Fatalf("first line %q: %v", first, err)
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	err = cmd.Wait()
	if !strings.Contains(string(rest), "session.usage_record") {
		t.Fatalf("no usage record after the stop:\n%s", rest)
	}
	if cmd.ProcessState.ExitCode() == 0 {
		t.Fatalf("exit 0 after the stop (%v), want the stopped CLI's status", err)
	}
}
