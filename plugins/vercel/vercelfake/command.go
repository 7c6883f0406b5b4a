package vercelfake

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// bwrap runs commands in a session directory.
type bwrap struct {
	path string
	// system are the read-only host mounts: /usr, /etc and the top-level
	// links or directories /bin, /lib... point into.
	system []string
}

func findBwrap() (bwrap, error) {
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return bwrap{}, errors.New("the fake Vercel server runs commands with bubblewrap (bwrap), which is not installed")
	}
	b := bwrap{path: p}
	for _, d := range []string{"/usr", "/etc"} {
		b.system = append(b.system, "--ro-bind", d, d)
	}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err == nil {
				b.system = append(b.system, "--symlink", target, d)
			}
		case fi.IsDir():
			b.system = append(b.system, "--ro-bind", d, d)
		}
	}
	return b, nil
}

// base are the arguments every command gets: the system mounts, its own
// pid namespace (killing bwrap kills the tree) and death with the server.
func (b bwrap) base() []string {
	args := []string{"--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--new-session"}
	args = append(args, b.system...)
	return append(args, "--proc", "/proc", "--dev", "/dev")
}

// logLine is one NDJSON log line.
type logLine struct {
	Stream string `json:"stream"`
	Data   any    `json:"data"`
}

// command is one command of a session.
type command struct {
	id        string
	name      string
	args      []string
	cwd       string
	sessionID string
	startedAt int64
	proc      *exec.Cmd
	done      chan struct{} // closed when it exited and its output is in

	mu       sync.Mutex
	logs     []logLine
	changed  chan struct{} // closed and replaced on every change
	exitCode *int
	duration int64
	signal   int // set by kill
}

func (c *command) json() map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string]any{
		"id": c.id, "name": c.name, "args": c.args, "cwd": c.cwd,
		"sessionId": c.sessionID, "startedAt": c.startedAt, "exitCode": nil,
	}
	if c.exitCode != nil {
		m["exitCode"] = *c.exitCode
		m["durationMs"] = c.duration
	}
	return m
}

// snapshot returns the log lines from i on, whether the command has
// ended, and a channel closed at the next change.
func (c *command) snapshot(i int) ([]logLine, bool, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.logs[i:], c.exitCode != nil, c.changed
}

func (c *command) append(l logLine) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logs = append(c.logs, l)
	close(c.changed)
	c.changed = make(chan struct{})
}

// kill signals the command's process tree: bwrap goes, and with it its pid
// namespace. The exit code becomes 128+signal.
func (c *command) kill(signal int) {
	c.mu.Lock()
	if c.exitCode == nil && c.signal == 0 {
		c.signal = signal
	}
	c.mu.Unlock()
	_ = c.proc.Process.Kill()
}

// cmdRequest is the body of POST .../cmd.
type cmdRequest struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Cwd     string            `json:"cwd"`
	Env     map[string]string `json:"env"`
	Sudo    bool              `json:"sudo"`
	Wait    bool              `json:"wait"`
	Logs    bool              `json:"logs"`
	Timeout int64             `json:"timeout"`
}

// start runs a command in the session.
func (s *Server) start(se *session, req cmdRequest) (*command, error) {
	cwd := req.Cwd
	if cwd == "" {
		cwd = sessionCwd
	} else if !path.IsAbs(cwd) {
		cwd = path.Join(sessionCwd, cwd)
	}
	home, user := "/home/"+se.user, se.user
	if req.Sudo {
		home, user = "/root", "root"
	}
	env := map[string]string{
		"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME": home, "USER": user, "LOGNAME": user, "LANG": "C.UTF-8",
	}
	for k, v := range se.sb.env {
		env[k] = v
	}
	for k, v := range req.Env {
		env[k] = v
	}
	args := s.base()
	if req.Sudo && os.Geteuid() != 0 {
		args = append(args, "--unshare-user", "--uid", "0", "--gid", "0")
	}
	if string(se.sb.networkPolicy) != "" && strings.Contains(string(se.sb.networkPolicy), `"deny-all"`) {
		args = append(args, "--unshare-net")
	}
	for _, d := range []string{"/vercel", "/tmp", "/home", "/root"} {
		args = append(args, "--bind", se.dir+d, d)
	}
	args = append(args, "--chdir", cwd, "--")
	args = append(args, req.Command)
	args = append(args, req.Args...)
	proc := exec.Command(s.path, args...)
	for k, v := range env {
		proc.Env = append(proc.Env, k+"="+v)
	}
	sort.Strings(proc.Env)
	stdout, err := proc.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := proc.StderrPipe()
	if err != nil {
		return nil, err
	}
	c := &command{
		id: newID("cmd_"), name: req.Command, args: req.Args, cwd: cwd, sessionID: se.id,
		startedAt: now(), proc: proc, done: make(chan struct{}), changed: make(chan struct{}),
	}
	if c.args == nil {
		c.args = []string{}
	}
	se.mu.Lock()
	if se.status != statusRunning {
		se.mu.Unlock()
		return nil, errorf(410, "sandbox_stopped", "Sandbox is stopped")
	}
	if err := proc.Start(); err != nil {
		se.mu.Unlock()
		return nil, err
	}
	se.cmds[c.id] = c
	se.mu.Unlock()

	var wg sync.WaitGroup
	var outMu sync.Mutex // one stream's chunk at a time, in emission order
	for stream, r := range map[string]io.Reader{"stdout": stdout, "stderr": stderr} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pump(stream, r, &outMu, c.append)
		}()
	}
	var timer *time.Timer
	if req.Timeout > 0 {
		timer = time.AfterFunc(time.Duration(req.Timeout)*time.Millisecond, func() { c.kill(9) })
	}
	go func() {
		wg.Wait()
		err := proc.Wait()
		if timer != nil {
			timer.Stop()
		}
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
		} else if err != nil {
			code = 1
		}
		c.mu.Lock()
		if c.signal != 0 {
			code = 128 + c.signal
		}
		c.exitCode = &code
		c.duration = now() - c.startedAt
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
		close(c.done)
	}()
	return c, nil
}

// pump reads a stream and appends its chunks as log lines. Chunks end on
// a UTF-8 boundary: data is a JSON string.
func pump(stream string, r io.Reader, mu *sync.Mutex, add func(logLine)) {
	buf := make([]byte, 32<<10)
	var rest []byte
	for {
		n, err := r.Read(buf)
		data := append(rest, buf[:n]...)
		cut := len(data)
		if err == nil {
			cut = runeBoundary(data)
		}
		if cut > 0 {
			mu.Lock()
			add(logLine{Stream: stream, Data: strings.ToValidUTF8(string(data[:cut]), "\uFFFD")})
			mu.Unlock()
		}
		rest = append([]byte(nil), data[cut:]...)
		if err != nil {
			return
		}
	}
}

// runeBoundary is len(b) less an incomplete UTF-8 sequence at its end.
func runeBoundary(b []byte) int {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return len(b) - i
			}
			break
		}
	}
	return len(b)
}
