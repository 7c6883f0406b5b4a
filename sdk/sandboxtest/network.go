package sandboxtest

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/internal/testkit"
	"github.com/missingstudio/sanddune/sdk/plugintest"
)

// connectScript tries a TCP connection to $1:$2 and prints "connected" or
// "refused"; "notool" when the sandbox has neither bash, nc nor python3.
const connectScript = `ip=$1 port=$2
if command -v bash >/dev/null 2>&1; then
  timeout 5 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$ip" "$port" 2>/dev/null && echo connected || echo refused
elif command -v nc >/dev/null 2>&1; then
  nc -z -w 5 "$ip" "$port" 2>/dev/null && echo connected || echo refused
elif command -v python3 >/dev/null 2>&1; then
  timeout 5 python3 -c 'import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 5)' "$ip" "$port" 2>/dev/null && echo connected || echo refused
else
  echo notool
fi`

// testNetworkNone: a provider that declares NetworkNone cuts a sandbox
// configured with it off the network: a connection to a listener on one of
// the host's addresses, which the sandbox as configured for the other
// checks does reach, never arrives.
func (s *suite) testNetworkNone(t plugintest.T) {
	if !s.caps.NetworkNone {
		t.Skipf("provider does not declare NetworkNone")
	}
	if s.opts.SkipNetworkNone != "" {
		t.Skipf("%s", s.opts.SkipNetworkNone)
	}
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ips := hostIPs(t)

	// Control: the sandbox the other checks use reaches the listener
	// (otherwise passing below would prove nothing).
	reach := ""
	for _, ip := range ips {
		r := s.mustExec(t, sh(connectScript, ip, port))
		if strings.Join(r.stdout, "") == "notool" {
			t.Skipf("the sandbox has none of bash, nc, python3 to open a connection with")
		}
		if strings.Join(r.stdout, "") == "connected" {
			reach = ip
			break
		}
	}
	if reach == "" {
		t.Skipf("the sandbox as configured for the other checks reaches none of the host's addresses %v either: nothing to compare with", ips)
	}

	cfgVal := s.opts.NetworkNoneConfig
	if cfgVal == cty.NilVal {
		vals := map[string]cty.Value{}
		if v := s.cfg.Value; v != cty.NilVal && v.Type().IsObjectType() && !v.IsNull() {
			vals = v.AsValueMap()
		}
		vals["network"] = cty.StringVal("none")
		cfgVal = cty.ObjectVal(vals)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	schema, err := s.p.ConfigSchema(ctx)
	if err != nil {
		t.Fatalf("ConfigSchema: %v", err)
	}
	cfg := testkit.Config(cfgVal, schema)
	if diags, err := s.p.Configure(ctx, cfg); err != nil || diags.HasErrors() {
		t.Fatalf("Configure with network none (%#v): %v %v (set Options.NetworkNoneConfig)", cfgVal, err, diags)
	}
	saved := s.cfg
	s.cfg = cfg
	sb, _, _ := s.create(t)
	s.cfg = saved
	defer sb.Close(context.Background())
	before := accepted.Load()
	var out strings.Builder
	res, err := sb.Exec(ctx, sh(connectScript, reach, port), func(l sdk.OutputLine) {
		if l.Stream == sdk.Stdout {
			out.Write(l.Text)
		}
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("Exec in the network-none sandbox: %+v %v", res, err)
	}
	if out.String() == "connected" || accepted.Load() != before {
		t.Errorf("a sandbox configured with network none connected to %s:%s on the host", reach, port)
	}
}

// hostIPs are the host's IPv4 addresses other than loopback (a sandbox
// with its own network namespace has its own loopback).
func hostIPs(t plugintest.T) []string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatalf("%v", err)
	}
	var ips []string
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			ips = append(ips, n.IP.String())
		}
	}
	if len(ips) == 0 {
		t.Skipf("the host has no IPv4 address other than loopback to listen on")
	}
	return ips
}
