package bubblewrap

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/missingstudio/sanddune/internal/egress"
	"github.com/missingstudio/sanddune/sdk"
)

// egressGuard enforces a sandbox's egress policy: every Exec gets a
// network namespace of its own with only loopback (like network = "none"),
// where the enforcer (sanddune-egress wrap, with CAP_NET_ADMIN there only)
// intercepts everything and runs the command without capabilities; what
// it lets through, this process dials on the host and passes back as a
// socket (a relay per Exec), and its refusals come here.
//
// Unprivileged bwrap owns that namespace from the keeper's outer user
// namespace (this user as 0) and would run the enforcer in the nested one
// (this user as itself) without any capability over it: an Exec with a
// policy stays in the outer one (keeper.joinArgs), and the enforcer gives
// the command a nested one of its own, as this user (wrap's --as).
type egressGuard struct {
	enforcer, policy string
	monitor          *egress.Monitor
}

func newEgressGuard(p sdk.EgressPolicy) (*egressGuard, error) {
	bin, err := egress.Binary()
	if err != nil {
		return nil, err
	}
	return &egressGuard{enforcer: bin, policy: egress.PolicyArg(p.Allow, p.Hosts), monitor: egress.NewMonitor()}, nil
}

// wrapped turns an attempt's bwrap command (ending in `-- COMMAND...`) into
// one that runs COMMAND under the enforcer in its own network namespace,
// with the relay's end as an extra file (fd numbers from 3 in files'
// order); userns when bwrap runs unprivileged (the enforcer makes the
// command's user namespace). done closes this process's copy once bwrap
// has ended.
func (g *egressGuard) wrapped(command []string, files []*os.File, userns bool) (args []string, extra []*os.File, done func(), err error) {
	host, child, err := egress.RelayPair()
	if err != nil {
		return nil, nil, nil, err
	}
	go egress.ServeRelay(host, g.monitor.Report)
	fd := 3 + len(files)
	sep := slices.Index(command, "--")
	args = []string{"--unshare-net", "--cap-add", "CAP_NET_ADMIN", "--cap-add", "CAP_SETPCAP"}
	if userns {
		args = append(args, "--cap-add", "CAP_SETFCAP")
	}
	args = append(args, command[:sep]...)
	// At its host path, wherever that is (a hidden or replaced directory).
	args = append(args, "--ro-bind", g.enforcer, g.enforcer, "--", g.enforcer, "wrap", strconv.Itoa(fd), g.policy,
		"--as", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()), "--")
	args = append(args, command[sep+1:]...)
	return args, append(files, child), func() { child.Close() }, nil
}

// WatchEgress implements sdk.EgressWatcher: the refusals of every Exec.
func (s *sandbox) WatchEgress(ctx context.Context, report func(sdk.EgressDenial)) error {
	if s.egress == nil {
		<-ctx.Done()
		return nil
	}
	return s.egress.monitor.Watch(ctx, func(d egress.Denial) { report(sdk.EgressDenial(d)) })
}

var _ sdk.EgressWatcher = (*sandbox)(nil)
