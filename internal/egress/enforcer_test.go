package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/missingstudio/sanddune/internal/egress/policy"
)

func TestSniffFindsTLSServerName(t *testing.T) {
	client, server := net.Pipe()
	go func() {
		_ = tls.Client(client, &tls.Config{ServerName: "api.example.com"}).Handshake()
	}()
	defer client.Close()
	name, head := sniff(server)
	if name != "api.example.com" || head[0] != 0x16 {
		t.Fatalf("sniff = %q (head % x)", name, head[:5])
	}
}

func TestSniffFindsHTTPHost(t *testing.T) {
	for req, want := range map[string]string{
		"GET / HTTP/1.1\r\nUser-Agent: x\r\nhost: Mirror.test:8080\r\n\r\n": "Mirror.test",
		"POST /x HTTP/1.1\r\nHost: [2001:db8::1]:80\r\n\r\nbody":            "2001:db8::1",
		"GET / HTTP/1.0\r\n\r\n":  "",
		"SSH-2.0-OpenSSH_9.2\r\n": "",
	} {
		name, head := sniff(strings.NewReader(req))
		if name != want || string(head) != req {
			t.Errorf("sniff(%q) = %q, %q; want %q", req, name, head, want)
		}
	}
}

// proxyTo runs an enforcer whose every connection claims to have been
// going to dst (no nftables here: a loopback stand-in for SO_ORIGINAL_DST).
func proxyTo(t *testing.T, p policy.Policy, dst netip.AddrPort) (addr string, denied func() []Denial) {
	t.Helper()
	var mu sync.Mutex
	var ds []Denial
	var d net.Dialer
	e := &enforcer{
		policy:  p,
		origDst: func(net.Conn) (netip.AddrPort, error) { return dst, nil },
		dial:    d.DialContext,
		report:  func(x Denial) { mu.Lock(); ds = append(ds, x); mu.Unlock() },
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go e.serveTCP(context.Background(), l)
	return l.Addr().String(), func() []Denial { mu.Lock(); defer mu.Unlock(); return append([]Denial(nil), ds...) }
}

// echoServer answers each connection with what it read first.
func echoServer(t *testing.T) netip.AddrPort {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 1024)
			n, _ := c.Read(buf)
			_, _ = c.Write(append([]byte("echo:"), buf[:n]...))
			c.Close()
		}
	}()
	return netip.MustParseAddrPort(l.Addr().String())
}

func roundTrip(t *testing.T, addr, send string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte(send))
	got, _ := io.ReadAll(c)
	return string(got)
}

func TestProxyChecksTheHTTPHostAndReportsRefusals(t *testing.T) {
	backend := echoServer(t)
	// The client believes ok.test is 192.0.2.80; hosts sends ok.test to the backend.
	p := mustParse(t, []string{"ok.test:" + backend.String()[len("127.0.0.1:"):]}, map[string]string{"ok.test": "127.0.0.1"})
	addr, denied := proxyTo(t, p, netip.AddrPortFrom(netip.MustParseAddr("192.0.2.80"), backend.Port()))

	req := "GET / HTTP/1.1\r\nHost: ok.test\r\n\r\n"
	if got := roundTrip(t, addr, req); got != "echo:"+req {
		t.Fatalf("allowed Host: got %q", got)
	}
	if got := roundTrip(t, addr, "GET / HTTP/1.1\r\nHost: unlisted.test\r\n\r\n"); got != "" {
		t.Fatalf("unlisted Host reached the backend: %q", got)
	}
	if got := roundTrip(t, addr, "\x00binary"); got != "" {
		t.Fatalf("an unnamed connection to an unlisted address got through: %q", got)
	}
	want := []Denial{
		{Host: "unlisted.test", Port: int(backend.Port()), Proto: "tcp", Reason: reasonNotAllowed},
		{Host: "192.0.2.80", Port: int(backend.Port()), Proto: "tcp", Reason: reasonNotAllowed},
	}
	if got := denied(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("denials = %+v, want %+v", got, want)
	}
}

// greeter says greeting to the first connection on a loopback port, the
// way a server that speaks first does.
func greeter(t *testing.T, greeting string) netip.AddrPort {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err == nil {
			_, _ = c.Write([]byte(greeting))
			c.Close()
		}
	}()
	return netip.MustParseAddrPort(l.Addr().String())
}

func TestProxyRelaysAServerFirstProtocolToAHostsAddress(t *testing.T) {
	backend := greeter(t, "220 ready\n")
	p := mustParse(t, []string{fmt.Sprintf("smtp.test:%d", backend.Port())}, map[string]string{"smtp.test": "127.0.0.1"})
	addr, _ := proxyTo(t, p, backend)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, _ := io.ReadAll(c) // says nothing: decided by the address after sniffWait
	if string(got) != "220 ready\n" {
		t.Fatalf("got %q", got)
	}
}

// fakeResolver answers every A question with 203.0.113.9 (the wire
// format an upstream resolver speaks).
func fakeResolver(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, _ := p.Start(buf[:n])
			q, _ := p.Question()
			_, _ = pc.WriteTo(reply(h, &q, dnsmessage.RCodeSuccess, netip.MustParseAddr("203.0.113.9")), from)
		}
	}()
	return pc.LocalAddr().String()
}

func TestDNSAnswersAllowedAndHostsNamesOnly(t *testing.T) {
	var denied []Denial
	var d net.Dialer
	e := &enforcer{
		policy:   mustParse(t, []string{"api.example.com"}, map[string]string{"ok.test": "172.17.0.1"}),
		dial:     d.DialContext,
		upstream: []string{fakeResolver(t)},
		report:   func(x Denial) { denied = append(denied, x) },
	}
	ask := func(name string, typ dnsmessage.Type) (dnsmessage.RCode, []netip.Addr) {
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7, RecursionDesired: true})
		_ = b.StartQuestions()
		_ = b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET})
		q, _ := b.Finish()
		resp := e.answer(context.Background(), q, "udp")
		var p dnsmessage.Parser
		h, err := p.Start(resp)
		if err != nil || h.ID != 7 {
			t.Fatalf("%s: bad response: %v", name, err)
		}
		return h.RCode, answerAddrs(resp)
	}
	if rc, addrs := ask("OK.test.", dnsmessage.TypeA); rc != dnsmessage.RCodeSuccess || len(addrs) != 1 || addrs[0] != netip.MustParseAddr("172.17.0.1") {
		t.Errorf("hosts name: %v %v", rc, addrs)
	}
	if rc, addrs := ask("ok.test.", dnsmessage.TypeAAAA); rc != dnsmessage.RCodeSuccess || len(addrs) != 0 {
		t.Errorf("hosts name, AAAA: %v %v", rc, addrs)
	}
	if rc, addrs := ask("api.example.com.", dnsmessage.TypeA); rc != dnsmessage.RCodeSuccess || len(addrs) != 1 || addrs[0] != netip.MustParseAddr("203.0.113.9") {
		t.Errorf("allowed name: %v %v", rc, addrs)
	}
	if got := e.namesOf(netip.MustParseAddr("203.0.113.9")); len(got) != 1 || got[0] != "api.example.com" {
		t.Errorf("the allowed name's address is not known as its: %v", got)
	}
	if rc, addrs := ask("c2VjcmV0.exfil.test.", dnsmessage.TypeTXT); rc != dnsmessage.RCodeNameError || len(addrs) != 0 {
		t.Errorf("unlisted name: %v %v", rc, addrs)
	}
	if len(denied) != 1 || denied[0] != (Denial{Host: "c2vjcmv0.exfil.test", Proto: "dns", Reason: reasonNotAllowed}) {
		t.Errorf("denials = %+v", denied)
	}
}

func TestMonitorPassesDenialsFromBeforeWatch(t *testing.T) {
	out := `{"ready":true}` + "\n" + `{"host":"x.test","proto":"dns","reason":"not in egress.allow"}` + "\n" +
		`{"host":"10.0.0.1","port":22,"proto":"tcp","reason":"not in egress.allow"}` + "\n"
	m := Follow(strings.NewReader(out))
	if err := m.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []Denial
	if err := m.Watch(context.Background(), func(d Denial) { got = append(got, d) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Host != "x.test" || got[1] != (Denial{Host: "10.0.0.1", Port: 22, Proto: "tcp", Reason: "not in egress.allow"}) {
		t.Fatalf("got %+v", got)
	}
}

func TestMonitorSaysWhyTheEnforcerFailed(t *testing.T) {
	m := Follow(strings.NewReader("Error: runc: operation not permitted\n" + `{"error":"program nftables: permission denied"}` + "\n"))
	err := m.Ready(context.Background())
	if err == nil || !strings.Contains(err.Error(), "runc: operation not permitted") || !strings.Contains(err.Error(), "program nftables: permission denied") {
		t.Fatalf("Ready = %v", err)
	}
}

func TestReporterCollapsesRepeats(t *testing.T) {
	var buf bytes.Buffer
	report := reporter(&buf)
	d := Denial{Host: "x.test", Proto: "dns", Reason: reasonNotAllowed}
	report(d)
	report(d) // the AAAA question right after the A one
	report(Denial{Host: "y.test", Proto: "dns", Reason: reasonNotAllowed})
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("%d lines: %s", n, buf.String())
	}
}

func mustParse(t *testing.T, allow []string, hosts map[string]string) policy.Policy {
	t.Helper()
	p, errs := policy.Parse(allow, hosts)
	if len(errs) > 0 {
		t.Fatalf("Parse: %v", errs)
	}
	return p
}
