package bubblewrap

import (
	"fmt"
	"os"
	"slices"
	"strings"
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
