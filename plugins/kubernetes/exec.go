package kubernetes

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// runScript runs "$@" in its own session so that the whole process tree
// can be killed: it checks that the working directory resolves inside the
// sandbox roots, records the session id in a pid file, waits, then kills
// what the command left running. Arguments: pid file, cwd, the roots, "--",
// the command. Exit 126 with a message means the cwd was refused. Stdin is
// always attached (empty when the request has none).
const runScript = `pidfile=$1 cwd=$2; shift 2
cd -- "$cwd" 2>/dev/null || { echo "sanddune: cwd $cwd: no such directory" >&2; exit 126; }
` + insideRoots + `
[ -n "$ok" ] || { echo "sanddune: cwd $cwd is outside the sandbox" >&2; exit 126; }
mkdir -p -- "${pidfile%/*}" || exit 126
exec 3<&0
setsid "$@" <&3 3<&- &
pid=$!
exec 3<&-
echo "$pid" >"$pidfile"
wait "$pid"
rc=$?
kill -s KILL -- "-$pid" 2>/dev/null
rm -f -- "$pidfile"
exit $rc`

// insideRoots sets ok when the shell's working directory, symlinks
// resolved, is inside one of the roots given as arguments up to "--"; it
// shifts them away.
const insideRoots = `here=$(pwd -P) ok=
while [ "$1" != -- ]; do
  r=$(cd -- "$1" 2>/dev/null && pwd -P) && case "$here/" in "$r"/*) ok=1 ;; esac
  shift
done
shift`

// killScript sends SIGTERM, then SIGKILL after a grace period, to the
// session recorded in the pid file $1 (waiting briefly for the file when
// the command is only starting).
const killScript = `i=0
while [ ! -s "$1" ] && [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done
pid=$(cat -- "$1" 2>/dev/null) || exit 0
kill -s TERM -- "-$pid" 2>/dev/null || exit 0
i=0
while kill -s 0 -- "-$pid" 2>/dev/null && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done
kill -s KILL -- "-$pid" 2>/dev/null
exit 0`

// killWait bounds how long Exec waits for the stream after killing.
const killWait = 15 * time.Second

// pidDir holds the pid files of running commands, under HOME.
const pidDir = ".cache/sanddune-exec"

// Exec runs a command through pods/exec (see runScript).
func (s *sandbox) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	if req.Sudo {
		return sdk.ExecResult{}, errors.New("kubernetes sandbox: sudo is not supported: the pod runs as a non-root user without privilege escalation")
	}
	argv, err := sandboxkit.Argv(req, "sh")
	if err != nil {
		return sdk.ExecResult{}, fmt.Errorf("kubernetes sandbox: %w", err)
	}
	cwd, err := s.confine(req.Cwd)
	if err != nil {
		return sdk.ExecResult{}, fmt.Errorf("kubernetes sandbox: cwd: %w", err)
	}
	if err := s.begin(); err != nil {
		return sdk.ExecResult{}, err
	}
	defer s.execs.Done()
	if len(req.Env) > 0 {
		argv = append(append([]string{"env"}, sandboxkit.EnvList(req.Env)...), argv...)
	}
	pidFile := path.Join(s.info.HomePath, pidDir, randomHex(8))
	cmd := append([]string{"sh", "-c", runScript, "sanddune-exec", pidFile, cwd}, s.roots...)
	cmd = append(append(cmd, "--"), argv...)

	stdin := bytes.NewReader(req.Stdin)
	out = sdk.SyncOutput(out)
	stdout, stderr := sdk.NewLineWriter(sdk.Stdout, out), sdk.NewLineWriter(sdk.Stderr, out)
	defer stdout.Close()
	defer stderr.Close()

	streamCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	done := make(chan error, 1)
	go func() { done <- s.stream(streamCtx, containerName, cmd, stdin, stdout, stderr) }()

	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var res sdk.ExecResult
	select {
	case err = <-done:
	case <-ctx.Done():
		s.kill(ctx, pidFile)
		stop()
		<-done
		return sdk.ExecResult{ExitCode: -1}, ctx.Err()
	case <-timeout:
		res.TimedOut = true
		s.kill(ctx, pidFile)
		select {
		case err = <-done:
		case <-time.After(killWait):
			stop()
			<-done
			return sdk.ExecResult{ExitCode: -1, TimedOut: true}, nil
		}
	}
	var exit utilexec.ExitError
	switch {
	case err == nil:
		return res, nil
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitStatus()
		return res, nil
	case res.TimedOut:
		res.ExitCode = -1
		return res, nil
	case s.isClosed():
		return sdk.ExecResult{ExitCode: -1}, errClosed
	}
	return sdk.ExecResult{ExitCode: -1}, fmt.Errorf("kubernetes sandbox: exec in pod %s: %w", s.info.ID, err)
}

// stream runs argv in a container of the pod over pods/exec: WebSocket
// (v5 channel protocol), falling back to SPDY when the apiserver cannot
// upgrade. A non-zero exit is a utilexec.ExitError.
func (s *sandbox) stream(ctx context.Context, container string, argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	u, err := s.execURL(container, argv, stdin != nil)
	if err != nil {
		return err
	}
	ws, err := remotecommand.NewWebSocketExecutor(s.cl.rest, "GET", u.String())
	if err != nil {
		return err
	}
	spdy, err := remotecommand.NewSPDYExecutor(s.cl.rest, "POST", u)
	if err != nil {
		return err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
}

// execURL is the pods/exec URL of argv in a container of the pod.
func (s *sandbox) execURL(container string, argv []string, stdin bool) (*url.URL, error) {
	cfg := *s.cl.rest
	cfg.APIPath = "/api"
	cfg.GroupVersion = &corev1.SchemeGroupVersion
	u, _, err := rest.DefaultServerUrlFor(&cfg)
	if err != nil {
		return nil, err
	}
	u.Path = path.Join(u.Path, "/api/v1/namespaces", s.ns, "pods", s.name, "exec")
	q := url.Values{"container": {container}, "stdout": {"true"}, "stderr": {"true"}, "command": argv}
	if stdin {
		q.Set("stdin", "true")
	}
	u.RawQuery = q.Encode()
	return u, nil
}

// kill stops the process tree of one exec (see killScript). Failures are
// ignored: deleting the pod is the backstop.
func (s *sandbox) kill(ctx context.Context, pidFile string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_ = s.stream(ctx, containerName, []string{"sh", "-c", killScript, "sanddune-kill", pidFile}, nil, io.Discard, io.Discard)
}

// confine makes p absolute (relative to RepoPath) and checks that it stays
// inside the workdir or home; symlinks are checked inside the pod.
func (s *sandbox) confine(p string) (string, error) {
	if p == "" {
		return s.info.RepoPath, nil
	}
	if !path.IsAbs(p) {
		p = path.Join(s.info.RepoPath, p)
	}
	p = path.Clean(p)
	for _, r := range s.roots {
		if sandboxkit.Within(p, r) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s is outside %s", sdk.ErrConfinement, p, s.roots)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
