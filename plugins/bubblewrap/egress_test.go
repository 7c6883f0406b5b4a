package bubblewrap

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/internal/egress/egresstest"
	"github.com/missingstudio/sanddune/internal/kittest"
	"github.com/missingstudio/sanddune/sdk"
)

func TestMain(m *testing.M) { os.Exit(egresstest.WithEnforcer(m)) }

// TestEgressPolicyEnforced: each Exec's own network namespace lets out
// only what the policy allows (the listed IP:port, a hosts name on its
// listed port, with a matching HTTP Host), the command holds no
// capability, and every refusal (TCP, DNS, UDP) reaches WatchEgress.
func TestEgressPolicyEnforced(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	listed := kittest.OtherIPv4(t, "")
	unlisted := kittest.OtherIPv4(t, listed)
	port, otherPort, namedPort := kittest.HelloListener(t, "0.0.0.0"), kittest.HelloListener(t, "0.0.0.0"), kittest.HelloListener(t, "0.0.0.0")
	policy := sdk.EgressPolicy{
		Allow: []string{fmt.Sprintf("%s:%d", listed, port), fmt.Sprintf("ok.test:%d", namedPort)},
		Hosts: map[string]string{"ok.test": listed},
	}
	sb, _ := create(t, cfgOf(nil), func(r *sdk.CreateRequest) { r.Egress = &policy })
	watch := egresstest.Watch(t, sb)
	defer watch.Stop(t)
	reaches := func(host string, port int, send string) bool {
		res, o := kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"bash", "-c", fmt.Sprintf(`exec 3<>/dev/tcp/%s/%d && printf "$0" >&3 && head -n1 <&3`, host, port), send}, Timeout: 30 * time.Second})
		return res.ExitCode == 0 && slices.Equal(o.Stdout, []string{"hello"})
	}
	for _, c := range []struct {
		host string
		port int
		send string
		want bool
	}{
		{listed, port, "", true},
		{listed, otherPort, "", false},
		{unlisted, port, "", false},
		{"ok.test", namedPort, "", true},
		{"ok.test", namedPort, `GET / HTTP/1.1\r\nHost: ok.test\r\n\r\n`, true},
		{"ok.test", namedPort, `GET / HTTP/1.1\r\nHost: unlisted.test\r\n\r\n`, false},
	} {
		if got := reaches(c.host, c.port, c.send); got != c.want {
			t.Errorf("%s:%d (sending %q): reached = %v, want %v", c.host, c.port, c.send, got, c.want)
		}
	}
	if _, o := kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"getent", "hosts", "unlisted.test"}}); len(o.Stdout) > 0 {
		t.Errorf("the unlisted name resolves: %q", o.Stdout)
	}
	kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"bash", "-c", fmt.Sprintf(`echo data > /dev/udp/%s/%d`, unlisted, port)}})
	if _, o := kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"grep", "-E", "^Cap(Prm|Eff|Amb)", "/proc/self/status"}}); len(o.Stdout) != 3 || slices.ContainsFunc(o.Stdout, func(l string) bool { return !strings.HasSuffix(l, "0000000000000000") }) {
		t.Errorf("the command holds capabilities: %q", o.Stdout)
	}

	want := []sdk.EgressDenial{
		{Host: listed, Port: otherPort, Proto: "tcp"},
		{Host: unlisted, Port: port, Proto: "tcp"},
		{Host: "unlisted.test", Port: namedPort, Proto: "tcp"},
		{Host: "unlisted.test", Proto: "dns"},
		{Host: unlisted, Port: port, Proto: "udp"},
	}
	watch.Expect(t, want...)
}

// TestEgressKeepsTheUser: with a policy the command runs as the user and
// group it runs as without one (this process's, which the sandbox reports
// as its UID), and what it writes in the worktree belongs to this user on
// the host, as root and unprivileged (TestUnprivileged) alike.
func TestEgressKeepsTheUser(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	policy := sdk.EgressPolicy{Allow: []string{"192.0.2.1:1"}}
	want := []string{strconv.Itoa(os.Getuid()), strconv.Itoa(os.Getgid())}
	for _, p := range []*sdk.EgressPolicy{nil, &policy} {
		sb, _ := create(t, cfgOf(nil), func(r *sdk.CreateRequest) { r.Egress = p })
		if res, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: "id -u && id -g && echo x > written"}); res.ExitCode != 0 || !slices.Equal(o.Stdout, want) {
			t.Errorf("egress %v: the command runs as %q (exit %d, %q), want %q", p != nil, o.Stdout, res.ExitCode, o.Stderr, want)
		}
		fi, err := os.Stat(filepath.Join(sb.repo, "written"))
		must(t, err)
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != os.Getuid() || int(st.Gid) != os.Getgid() {
			t.Errorf("egress %v: the file the command wrote belongs to %d:%d on the host, want %d:%d", p != nil, st.Uid, st.Gid, os.Getuid(), os.Getgid())
		}
	}
}
