package kittest

import (
	"net"
	"testing"
)

// HelloListener answers "hello" to every connection on a free port of host
// (an address of this machine; "0.0.0.0": all of them), until the test
// ends, and returns the port: a test host for network checks.
func HelloListener(t testing.TB, host string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
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
	return ln.Addr().(*net.TCPAddr).Port
}

// OtherIPv4 is an IPv4 address of this machine other than loopback and
// not: a sandbox reaches it through its gateway, like an outside host. The
// test is skipped when there is none.
func OtherIPv4(t testing.TB, not string) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && n.IP.String() != not {
			return n.IP.String()
		}
	}
	t.Skipf("this machine has no IPv4 address besides %s to stand for an outside host", not)
	return ""
}
