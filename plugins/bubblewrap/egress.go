package bubblewrap

import (
	"context"
	"errors"
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
type egressGuard struct {
	enforcer, policy string
	monitor          *egress.Monitor
}

func newEgressGuard(p sdk.EgressPolicy) (*egressGuard, error) {
	if os.Geteuid() != 0 {
		// Unprivileged bwrap runs the command in a user namespace nested in
		// the one owning the network namespace: no capability there.
		return nil, errors.New("bubblewrap enforces egress only when sanddune runs as root (unprivileged bwrap cannot give the enforcer CAP_NET_ADMIN over the sandbox's network namespace): run as root, or use the docker or podman sandbox for egress")
	}
	bin, err := egress.Binary()
	if err != nil {
		return nil, err
	}
	return &egressGuard{enforcer: bin, policy: egress.PolicyArg(p.Allow, p.Hosts), monitor: egress.NewMonitor()}, nil
}

// wrapped turns an attempt's bwrap command (ending in `-- COMMAND...`) into
// one that runs COMMAND under the enforcer in its own network namespace,
// with the relay's end as an extra file (fd numbers from 3 in files'
// order). done closes this process's copy once bwrap has ended.
func (g *egressGuard) wrapped(command []string, files []*os.File) (args []string, extra []*os.File, done func(), err error) {
	host, child, err := egress.RelayPair()
	if err != nil {
		return nil, nil, nil, err
	}
	go egress.ServeRelay(host, g.monitor.Report)
	fd := 3 + len(files)
	sep := slices.Index(command, "--")
	args = append([]string{"--unshare-net", "--cap-add", "CAP_NET_ADMIN", "--cap-add", "CAP_SETPCAP"}, command[:sep]...)
	// At its host path, wherever that is (a hidden or replaced directory).
	args = append(args, "--ro-bind", g.enforcer, g.enforcer, "--", g.enforcer, "wrap", strconv.Itoa(fd), g.policy, "--")
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
