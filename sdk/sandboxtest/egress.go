package sandboxtest

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/plugintest"
)

// readScript connects to $1:$2 by plain TCP and prints the first line the
// server sends; "notool" when the sandbox has neither bash nor python3.
const readScript = `if command -v bash >/dev/null 2>&1; then
  timeout 10 bash -c 'exec 3<>"/dev/tcp/$0/$1" && head -n1 <&3' "$1" "$2" 2>/dev/null || true
elif command -v python3 >/dev/null 2>&1; then
  timeout 10 python3 -c 'import socket,sys; print(socket.create_connection((sys.argv[1], int(sys.argv[2])), 5).makefile().readline().strip())' "$1" "$2" 2>/dev/null || true
else
  echo notool
fi`

// resolveScript prints the address $1 resolves to, nothing when it does
// not resolve.
const resolveScript = `if command -v getent >/dev/null 2>&1; then
  getent hosts "$1" | awk '{print $1; exit}'
else
  python3 -c 'import socket,sys; print(socket.gethostbyname(sys.argv[1]))' "$1" 2>/dev/null || true
fi`

// helloListener answers "hello" to every connection on a port of every
// address of this machine, until the test ends.
func helloListener(t plugintest.T) string {
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// testEgress: a provider that declares the egress capability enforces
// CreateRequest.Egress for a plain TCP client, against listeners on two
// addresses of this machine that the sandbox without a policy reaches: a
// listed IP:port is reached, the same IP on another port is not, nor the
// other address; a hosts name resolves to its address and its listed port
// is reached; an unlisted name does not resolve. The sandbox's
// EgressWatcher reports each refusal.
func (s *suite) testEgress(t plugintest.T) {
	if !s.caps.Egress {
		t.Skipf("provider does not declare Egress")
	}
	if s.opts.SkipEgress != "" {
		t.Skipf("%s", s.opts.SkipEgress)
	}
	port, otherPort, namedPort := helloListener(t), helloListener(t), helloListener(t)
	reads := func(sb sdk.Sandbox, host, port string) string {
		var out strings.Builder
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		res, err := sb.Exec(ctx, sh(readScript, host, port), func(l sdk.OutputLine) {
			if l.Stream == sdk.Stdout {
				out.Write(l.Text)
			}
		})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("Exec: %+v %v", res, err)
		}
		return out.String()
	}

	// Control: the addresses of this machine the sandbox without a policy
	// reaches, on both ports (else passing below would prove nothing).
	var reach []string
	for _, ip := range hostIPs(t) {
		got := reads(s.sb, ip, port)
		if got == "notool" {
			t.Skipf("the sandbox has neither bash nor python3 to open a connection with")
		}
		if got == "hello" && reads(s.sb, ip, otherPort) == "hello" {
			reach = append(reach, ip)
		}
	}
	if len(reach) < 2 {
		t.Skipf("the sandbox without a policy reaches %d of this machine's addresses %v: the check needs two (a listed and an unlisted one)", len(reach), hostIPs(t))
	}
	listed, unlisted := reach[0], reach[1]

	policy := &sdk.EgressPolicy{
		Allow: []string{listed + ":" + port, "listed.sandboxtest:" + namedPort},
		Hosts: map[string]string{"listed.sandboxtest": listed},
	}
	s.egress = policy
	sb, _, _ := s.create(t)
	s.egress = nil
	defer sb.Close(context.Background())
	watcher, ok := sb.(sdk.EgressWatcher)
	if !ok {
		t.Fatalf("the sandbox (%T) does not implement sdk.EgressWatcher", sb)
	}
	var mu sync.Mutex
	var denied []sdk.EgressDenial
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	go func() {
		watched <- watcher.WatchEgress(ctx, func(d sdk.EgressDenial) {
			mu.Lock()
			denied = append(denied, d)
			mu.Unlock()
		})
	}()

	if got := reads(sb, listed, port); got != "hello" {
		t.Errorf("the listed %s:%s is not reachable (read %q)", listed, port, got)
	}
	if got := reads(sb, listed, otherPort); got == "hello" {
		t.Errorf("the unlisted port %s:%s is reachable", listed, otherPort)
	}
	if got := reads(sb, unlisted, port); got == "hello" {
		t.Errorf("the unlisted address %s:%s is reachable", unlisted, port)
	}
	if r := s.execIn(sb, sh(resolveScript, "listed.sandboxtest")); strings.TrimSpace(r) != listed {
		t.Errorf("the hosts name listed.sandboxtest resolves to %q, want %s", r, listed)
	}
	if got := reads(sb, "listed.sandboxtest", namedPort); got != "hello" {
		t.Errorf("the listed listed.sandboxtest:%s is not reachable (read %q)", namedPort, got)
	}
	if r := s.execIn(sb, sh(resolveScript, "unlisted.sandboxtest")); strings.TrimSpace(r) != "" {
		t.Errorf("the unlisted name unlisted.sandboxtest resolves to %q", r)
	}

	want := []sdk.EgressDenial{
		{Host: listed, Port: atoi(otherPort), Proto: "tcp"},
		{Host: unlisted, Port: atoi(port), Proto: "tcp"},
		{Host: "unlisted.sandboxtest", Proto: "dns"},
	}
	missing := want
	for deadline := time.Now().Add(hangGuard); len(missing) > 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		missing = slices.DeleteFunc(slices.Clone(want), func(w sdk.EgressDenial) bool {
			return slices.ContainsFunc(denied, func(d sdk.EgressDenial) bool {
				return d.Host == w.Host && d.Port == w.Port && d.Proto == w.Proto && d.Reason != ""
			})
		})
		mu.Unlock()
	}
	cancel()
	if err := <-watched; err != nil {
		t.Errorf("WatchEgress: %v", err)
	}
	if len(missing) > 0 {
		t.Errorf("refusals not reported (with a reason): %+v; reported: %+v", missing, denied)
	}
	for _, d := range denied {
		if d.Host == listed && d.Port == atoi(port) || d.Port == atoi(namedPort) {
			t.Errorf("an allowed connection was reported refused: %+v", d)
		}
	}
}

// execIn runs req in sb and returns its stdout.
func (s *suite) execIn(sb sdk.Sandbox, req sdk.ExecRequest) string {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	var out strings.Builder
	_, _ = sb.Exec(ctx, req, func(l sdk.OutputLine) {
		if l.Stream == sdk.Stdout {
			out.Write(l.Text)
		}
	})
	return out.String()
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
