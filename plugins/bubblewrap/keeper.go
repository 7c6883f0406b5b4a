package bubblewrap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/missingstudio/sanddune/sdk/procgroup"
)

// nsGetUserns is the NS_GET_USERNS ioctl: the user namespace owning a
// namespace.
const nsGetUserns = 0xb701

// keeperStartTimeout bounds how long a keeper may take to report its pid.
const keeperStartTimeout = 20 * time.Second

// keeper is a `bwrap --unshare-pid ... sleep infinity` whose PID namespace
// every Exec of a sandbox joins (bwrap is its init and reaps orphans).
// Killing it kills every process in the sandbox, and it dies with this
// process (parent-death signals all the way down to its init).
type keeper struct {
	cmd  *exec.Cmd
	done chan struct{}
	// Namespace files passed to each Exec's bwrap: the user namespace owning
	// the PID namespace (bwrap sets up there), the keeper's own user
	// namespace (the command's final one), and the PID namespace. The user
	// namespaces are nil when bwrap runs privileged (as root).
	ownerNS, userNS, pidNS *os.File
}

// startKeeper starts a keeper, again when bwrap fails during its setup:
// like an Exec's (see setupAttempts), it races with host mount changes,
// and the keeper's command is ours, so starting it again is safe.
func startKeeper(bwrap string) (k *keeper, err error) {
	for range setupAttempts {
		if k, err = startKeeperOnce(bwrap); !errors.Is(err, errKeeperDied) {
			break
		}
	}
	return k, err
}

// errKeeperDied is a keeper's bwrap ending before it ran the command.
var errKeeperDied = errors.New("bwrap keeper did not start its command")

func startKeeperOnce(bwrap string) (*keeper, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--cap-drop", "ALL",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--info-fd", "3", "--", "sleep", "infinity")
	cmd.ExtraFiles = []*os.File{w}
	cmd.Stderr = &stderr
	cmd.SysProcAttr = procgroup.Attr()
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Setsid = false, true // a session of its own, and so a group
	k := &keeper{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go k.run(started)
	err = <-started
	w.Close()
	if err != nil {
		return nil, fmt.Errorf("start bwrap: %w", err)
	}

	var info struct {
		ChildPID int `json:"child-pid"`
	}
	decoded := make(chan error, 1)
	go func() { decoded <- json.NewDecoder(r).Decode(&info) }()
	select {
	case err = <-decoded:
		if err != nil || info.ChildPID <= 0 {
			err = errKeeperDied
		}
	case <-time.After(keeperStartTimeout):
		err = errors.New("bwrap did not report its pid in time")
	}
	if err == nil {
		err = k.openNamespaces(info.ChildPID)
	}
	if err != nil {
		k.stop()
		return nil, fmt.Errorf("%w (%v): %s", err, k.cmd.ProcessState, strings.TrimSpace(stderr.String()))
	}
	return k, nil
}

// run starts the keeper and waits for it on one locked OS thread: the
// kernel sends the parent-death signal when the thread that forked the
// keeper ends, which must be when this process does, not when the Go
// runtime ends an idle thread.
func (k *keeper) run(started chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := k.cmd.Start(); err != nil {
		started <- err
		return
	}
	started <- nil
	_ = k.cmd.Wait()
	close(k.done)
}

// openNamespaces opens the namespaces of the keeper's command (the child
// of bwrap's init, once it runs `sleep`: unprivileged bwrap moves it to a
// nested user namespace during setup).
func (k *keeper) openNamespaces(initPID int) error {
	cmdPID := 0
	for deadline := time.Now().Add(keeperStartTimeout); cmdPID == 0; time.Sleep(time.Millisecond) {
		if !k.alive() {
			return errKeeperDied
		}
		if time.Now().After(deadline) {
			return errors.New("bwrap keeper did not start its command in time")
		}
		for _, c := range childPIDs(initPID) {
			if comm, _ := os.ReadFile(filepath.Join("/proc", c, "comm")); strings.TrimSpace(string(comm)) == "sleep" {
				cmdPID, _ = strconv.Atoi(c)
			}
		}
	}
	dir := filepath.Join("/proc", strconv.Itoa(cmdPID), "ns")
	var err error
	if k.pidNS, err = os.Open(filepath.Join(dir, "pid")); err != nil {
		return fmt.Errorf("keeper pid namespace: %w", err)
	}
	user, err := os.Open(filepath.Join(dir, "user"))
	if err != nil {
		return fmt.Errorf("keeper user namespace: %w", err)
	}
	if sameFile(user, "/proc/self/ns/user") {
		user.Close()
		return nil // privileged bwrap: no user namespace to join
	}
	fd, _, errno := syscall.Syscall(syscall.SYS_IOCTL, k.pidNS.Fd(), nsGetUserns, 0)
	if errno != 0 {
		user.Close()
		return fmt.Errorf("owner of the keeper pid namespace: %w", errno)
	}
	k.ownerNS = os.NewFile(fd, "userns-owner")
	k.userNS = user
	return nil
}

// childPIDs lists the children of pid, from /proc/PID/task/PID/children
// or, on kernels without it, by scanning every process's parent.
func childPIDs(pid int) []string {
	p := strconv.Itoa(pid)
	if b, err := os.ReadFile(filepath.Join("/proc", p, "task", p, "children")); err == nil {
		return strings.Fields(string(b))
	}
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		// The fields after the parenthesised command: state, ppid, ...
		if i := bytes.LastIndexByte(b, ')'); i > 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) > 1 && f[1] == p {
				out = append(out, filepath.Base(d))
			}
		}
	}
	return out
}

func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// joinArgs are the bwrap arguments (and files, from fd 3 on) that put an
// Exec in the keeper's PID namespace; in the keeper's command's user
// namespace too unless ownerOnly (the command's enforcer makes its own: see
// egressGuard).
func (k *keeper) joinArgs(ownerOnly bool) ([]string, []*os.File) {
	var args []string
	var files []*os.File
	add := func(flag string, f *os.File) {
		args = append(args, flag, strconv.Itoa(3+len(files)))
		files = append(files, f)
	}
	if k.ownerNS != nil {
		add("--userns", k.ownerNS)
		if !ownerOnly && !sameFile(k.userNS, "/proc/self/fd/"+strconv.Itoa(int(k.ownerNS.Fd()))) {
			add("--userns2", k.userNS)
		}
	}
	add("--pidns", k.pidNS)
	return args, files
}

func (k *keeper) alive() bool {
	select {
	case <-k.done:
		return false
	default:
		return true
	}
}

// stop kills the keeper (and with it the PID namespace) and waits for it.
// A keeper that already ended is not signalled: its group id may since
// name someone else's processes.
func (k *keeper) stop() {
	if k.alive() {
		_ = procgroup.Kill(k.cmd.Process.Pid)
	}
	<-k.done
	for _, f := range []*os.File{k.ownerNS, k.userNS, k.pidNS} {
		if f != nil {
			f.Close()
		}
	}
}

// killTree SIGKILLs an Exec: bwrap's process group (recorded when it
// started), then every process whose environment holds marker, the Exec's
// random NAME=value, as an exact entry, and their descendants (what
// detached from the group). Nothing is killed for its working directory
// or owner.
func killTree(pgid int, marker string) {
	_ = procgroup.Kill(pgid)
	_ = procgroup.KillOwnMarked(marker)
}
