package podman

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// cli runs one podman binary with the global flags a config asks for.
type cli struct {
	bin    string   // absolute path
	global []string // --runtime, --cgroup-manager, or --url
	socket string   // the podman service it talks to, if any
}

// errNotInstalled: no podman on PATH (and no binary configured).
var errNotInstalled = errors.New("podman is not installed (not on PATH): install it (Debian/Ubuntu: `apt-get install podman`; Fedora: `dnf install podman`) or set binary")

// newCLI resolves the podman binary of a config (binary, else podman on
// PATH).
func newCLI(c config) (cli, error) {
	bin := c.Binary
	if bin == "" {
		bin = "podman"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		if c.Binary != "" {
			return cli{}, fmt.Errorf("podman binary %q not found: fix binary: %w", c.Binary, err)
		}
		return cli{}, errNotInstalled
	}
	if c.Socket != "" {
		return cli{bin: path, global: []string{"--url", c.Socket}, socket: c.Socket}, nil
	}
	var g []string
	if c.Runtime != "" {
		g = append(g, "--runtime", c.Runtime)
	}
	if c.CgroupManager != "" {
		g = append(g, "--cgroup-manager", c.CgroupManager)
	}
	return cli{bin: path, global: g}, nil
}

// rootless reports whether the containers run under rootless podman: the
// CLI's own user when it runs them, else the service's.
func (c cli) rootless(ctx context.Context) (bool, error) {
	if c.socket == "" {
		return os.Geteuid() != 0, nil
	}
	var info struct {
		Host struct {
			Security struct {
				Rootless bool `json:"rootless"`
			} `json:"security"`
		} `json:"host"`
	}
	if err := c.runJSON(ctx, &info, "info", "--format", "json"); err != nil {
		return false, fmt.Errorf("podman service at %s: %w: start it with `podman system service %s`, or fix socket", c.socket, err, c.socket)
	}
	return info.Host.Security.Rootless, nil
}

// argv is the full command line of a podman subcommand.
func (c cli) argv(args ...string) []string {
	return append(append([]string{c.bin}, c.global...), args...)
}

// command prepares a podman subcommand. env adds variables to podman's own
// environment: values that `--env KEY` passes on to the container without
// putting them on a command line (where every user of the host can read
// them).
func (c cli) command(ctx context.Context, env map[string]string, args ...string) *exec.Cmd {
	argv := c.argv(args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = c.environ(env)
	cmd.WaitDelay = cleanupTimeout
	return cmd
}

// environ is the plugin's environment with env on top.
func (c cli) environ(env map[string]string) []string {
	return sandboxkit.EnvList(c.environMap(env))
}

// environMap is environ as a map.
func (c cli) environMap(env map[string]string) map[string]string {
	m := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	maps.Copy(m, env)
	return m
}

// run runs a podman subcommand and returns its stdout; a failure carries
// podman's stderr.
func (c cli) run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	return c.runEnv(ctx, nil, stdin, args...)
}

func (c cli) runEnv(ctx context.Context, env map[string]string, stdin io.Reader, args ...string) ([]byte, error) {
	cmd := c.command(ctx, env, args...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return stdout.Bytes(), &cliError{args: args, err: err, stderr: strings.TrimSpace(stderr.String())}
	}
	return stdout.Bytes(), nil
}

// runJSON runs a podman subcommand and decodes its JSON output into v.
func (c cli) runJSON(ctx context.Context, v any, args ...string) error {
	out, err := c.run(ctx, nil, args...)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("podman %s: unexpected output: %w", args[0], err)
	}
	return nil
}

// cliError is a failed podman command: its subcommand, exit status and
// what podman said.
type cliError struct {
	args   []string
	err    error
	stderr string
}

func (e *cliError) Error() string {
	msg := e.stderr
	if msg == "" {
		msg = e.err.Error()
	}
	// Podman prefixes its messages with "Error: ".
	msg = strings.TrimPrefix(msg, "Error: ")
	return fmt.Sprintf("podman %s: %s", e.args[0], msg)
}

func (e *cliError) Unwrap() error { return e.err }

// exitCode is the podman process's exit status, or -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// noSuchObject reports whether podman failed because an object (container,
// image) does not exist.
func noSuchObject(err error) bool {
	var ce *cliError
	return errors.As(err, &ce) && (strings.Contains(ce.stderr, "no such") || strings.Contains(ce.stderr, "image not known"))
}

// podmanReads reports whether podman itself reads the variable key: passing their values
// through its environment would change how podman runs, so they go on the
// command line instead (they are never credentials).
func podmanReads(key string) bool {
	switch key {
	case "PATH", "HOME", "TMPDIR", "REGISTRY_AUTH_FILE", "NOTIFY_SOCKET", "DBUS_SESSION_BUS_ADDRESS":
		return true
	}
	for _, p := range []string{"XDG_", "CONTAINERS_", "CONTAINER_", "PODMAN_", "STORAGE_", "BUILDAH_", "_CONTAINERS_"} {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// envArgs turns an environment for the container into --env arguments and
// the values podman's own environment must carry.
func envArgs(env map[string]string) (args []string, values map[string]string) {
	values = map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if podmanReads(k) {
			args = append(args, "--env", k+"="+env[k])
			continue
		}
		args = append(args, "--env", k)
		values[k] = env[k]
	}
	return args, values
}
