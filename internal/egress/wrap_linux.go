package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// wrap runs a command in a network namespace of its own where the policy
// holds (bubblewrap: `bwrap --unshare-net --cap-add CAP_NET_ADMIN --cap-add
// CAP_SETPCAP [--cap-add CAP_SETFCAP] ... sanddune-egress wrap FD POLICY
// --as UID:GID -- COMMAND...`). The namespace has only loopback: wrap
// routes everything there, intercepts it like the sidecar does, and has
// the host (the relay on fd FD) dial what it lets through and receive
// every refusal. The command runs without capabilities, as UID:GID (see
// commandAs); wrap exits with its status.
func wrap(args []string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "sanddune-egress:", err)
		return 125
	}
	if len(args) < 6 || args[2] != "--as" || args[4] != "--" {
		return fail(errors.New(wrapUsage))
	}
	fd, err := strconv.Atoi(args[0])
	if err != nil {
		return fail(err)
	}
	policy, err := parseArg(args[1])
	if err != nil {
		return fail(err)
	}
	var uid, gid int
	if _, err := fmt.Sscanf(args[3], "%d:%d", &uid, &gid); err != nil {
		return fail(fmt.Errorf("--as %q: %w", args[3], err))
	}
	unix.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "egress-relay")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return fail(fmt.Errorf("relay: %w", err))
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return fail(errors.New("relay: not a unix socket"))
	}
	if err := routeThroughLoopback(); err != nil {
		return fail(err)
	}
	r := newRemote(uc)
	e := &enforcer{policy: policy, origDst: originalDst, dial: r.dial, upstream: nameservers("/etc/resolv.conf"), report: r.report}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := e.start(ctx, false); err != nil {
		return fail(err)
	}
	if err := dropForCommand(); err != nil {
		return fail(err)
	}

	cmd := exec.Command(args[5], args[6:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if cmd.SysProcAttr, err = commandAs(uid, gid); err != nil {
		return fail(err)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT)
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	go func() {
		for s := range sigs {
			if s == syscall.SIGTERM || s == syscall.SIGHUP { // a terminal's INT and QUIT reach the command itself
				_ = cmd.Process.Signal(s)
			}
		}
	}()
	err = cmd.Wait()
	e.flushUDP() // report what the command sent just before it ended
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return fail(err)
}

// wrapUsage is wrap's command line.
const wrapUsage = "usage: sanddune-egress wrap FD POLICY-JSON --as UID:GID -- COMMAND [ARG ...]"

// commandAs makes the command run as uid:gid. Where wrap is that user
// already (bwrap as root), the command inherits it. Unprivileged bwrap runs
// wrap in the user namespace owning the network namespace, which maps the
// user to 0 (bwrap runs its commands in one nested in it, where the user is
// itself, with no capability over the network): the command gets a nested
// namespace of its own, mapping uid:gid to wrap's ids like bwrap's does
// (mapping the parent's 0 takes CAP_SETFCAP there). It keeps no capability:
// a non-root user loses them at exec (its bounding set is full again, as in
// any new user namespace, but that namespace owns nothing).
func commandAs(uid, gid int) (*syscall.SysProcAttr, error) {
	if uid == os.Getuid() && gid == os.Getgid() {
		return nil, nil
	}
	if uid == 0 {
		return nil, errors.New("--as 0: root would keep the capabilities of a user namespace of its own")
	}
	return &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: os.Getgid(), Size: 1}},
	}, nil
}

// routeThroughLoopback gives a namespace that has only loopback default
// routes through it, from an address of its own (replies must find their
// way back), so connections to any address reach the rules instead of
// failing as unreachable.
func routeThroughLoopback() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	for _, r := range []struct{ src, dst string }{{"169.254.255.1/32", "0.0.0.0/0"}, {"fd5d:d0e::1/128", "::/0"}} {
		src, err := netlink.ParseAddr(r.src)
		if err == nil {
			err = netlink.AddrAdd(lo, src)
		}
		_, dst, _ := net.ParseCIDR(r.dst)
		if err == nil {
			err = netlink.RouteAdd(&netlink.Route{LinkIndex: lo.Attrs().Index, Scope: netlink.SCOPE_LINK, Dst: dst, Src: src.IP})
		}
		if err != nil && src.IP.To4() != nil { // a namespace without IPv6 has no IPv6 to intercept
			return fmt.Errorf("route through loopback: %w", err)
		}
	}
	return nil
}

// dropForCommand makes sure the command gets no capability: nothing
// ambient or inheritable, and none of CAP_NET_ADMIN, CAP_SETPCAP and
// CAP_SETFCAP in the bounding set (a root command would regain them), on
// every thread. wrap keeps its own, so the command (same user) cannot
// ptrace it, and is not dumpable either.
func dropForCommand() error {
	for _, c := range []uintptr{unix.CAP_NET_ADMIN, unix.CAP_SETPCAP, unix.CAP_SETFCAP} {
		if _, _, errno := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, c, 0); errno != 0 {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, errno)
		}
	}
	if _, _, errno := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0); errno != 0 {
		return fmt.Errorf("clear ambient capabilities: %w", errno)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if _, _, errno := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return fmt.Errorf("clear inheritable capabilities: %w", errno)
	}
	return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
