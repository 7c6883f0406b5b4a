package egress

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/missingstudio/sanddune/internal/egress/policy"
)

// Main runs the enforcer in the sandbox's network namespace (it needs
// CAP_NET_ADMIN there): args[0] is the policy as JSON (PolicyArg). It
// prints readyLine once its rules are in place, then each denial, and runs
// until it is signalled. With "wrap" first, it runs a command instead
// (wrap).
func Main(args []string, stdout io.Writer) int {
	out := json.NewEncoder(stdout)
	fail := func(err error) int {
		_ = out.Encode(map[string]string{"error": err.Error()})
		return 1
	}
	if len(args) > 0 && args[0] == "wrap" {
		return wrap(args[1:])
	}
	if len(args) != 1 {
		return fail(errors.New("usage: sanddune-egress POLICY-JSON | wrap FD POLICY-JSON --as UID:GID -- COMMAND [ARG ...]"))
	}
	policy, err := parseArg(args[0])
	if err != nil {
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	dialer := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK, Mark) }); err != nil {
			return err
		}
		return serr
	}}
	dialer.Resolver = &net.Resolver{PreferGo: true, Dial: dialer.DialContext}
	e := &enforcer{
		policy: policy, origDst: originalDst, dial: dialer.DialContext,
		upstream: nameservers("/etc/resolv.conf"), report: reporter(stdout),
	}
	if err := e.start(ctx, true); err != nil {
		return fail(err)
	}
	fmt.Fprintln(stdout, readyLine)
	<-ctx.Done()
	return 0
}

// start listens on loopback, programs the namespace's rules to send what
// they intercept there (direct: IP and CIDR entries go out without it) and
// serves until ctx ends.
func (e *enforcer) start(ctx context.Context, direct bool) error {
	tcp, err := listenTCP()
	if err != nil {
		return err
	}
	dnsTCP, err := listenTCP()
	if err != nil {
		return err
	}
	dnsUDP, err := listenUDP()
	if err != nil {
		return err
	}
	udp, err := listenUDP()
	if err != nil {
		return err
	}
	to := ports{tcp: port(tcp[0].Addr()), dnsTCP: port(dnsTCP[0].Addr()), dnsUDP: port(dnsUDP[0].LocalAddr()), udp: port(udp[0].LocalAddr())}
	if err := installRules(e.policy, to, direct); err != nil {
		return fmt.Errorf("program nftables: %w", err)
	}
	for _, l := range tcp {
		go e.serveTCP(ctx, l)
	}
	for _, l := range dnsTCP {
		go e.serveDNSTCP(ctx, l)
	}
	for _, pc := range dnsUDP {
		go e.serveDNS(ctx, pc)
	}
	e.flushed = make(chan struct{}, 1)
	for _, pc := range udp {
		e.udp = append(e.udp, pc.(*net.UDPConn))
		go e.refuseUDP(pc.(*net.UDPConn), to.udp)
	}
	return nil
}

// flushSentinel marks the datagram flushUDP sends itself.
const flushSentinel = "\x00sanddune-egress-flush"

// flushUDP returns once the datagrams already queued for refusal are
// reported: it queues one of its own behind them and waits for it.
func (e *enforcer) flushUDP() {
	for _, pc := range e.udp {
		c, err := net.DialUDP("udp", nil, pc.LocalAddr().(*net.UDPAddr))
		if err != nil {
			continue
		}
		_, err = c.Write([]byte(flushSentinel))
		c.Close()
		if err == nil {
			<-e.flushed
		}
	}
}

// parseArg parses a PolicyArg.
func parseArg(arg string) (policy.Policy, error) {
	var raw policyJSON
	if err := json.Unmarshal([]byte(arg), &raw); err != nil {
		return policy.Policy{}, fmt.Errorf("policy: %w", err)
	}
	p, errs := policy.Parse(raw.Allow, raw.Hosts)
	return p, errors.Join(errs...)
}

// listenTCP listens on a free loopback port, where the nat chain's
// redirect sends (127.0.0.1), and, when the namespace has IPv6, on the same
// port of ::1. Replies must come from that address to be un-NATed.
func listenTCP() ([]net.Listener, error) {
	l4, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ls := []net.Listener{l4}
	if l6, err := net.Listen("tcp6", fmt.Sprintf("[::1]:%d", port(l4.Addr()))); err == nil {
		ls = append(ls, l6)
	}
	return ls, nil
}

func listenUDP() ([]net.PacketConn, error) {
	c4, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	cs := []net.PacketConn{c4}
	if c6, err := net.ListenPacket("udp6", fmt.Sprintf("[::1]:%d", port(c4.LocalAddr()))); err == nil {
		cs = append(cs, c6)
	}
	return cs, nil
}

func port(a net.Addr) uint16 {
	return netip.MustParseAddrPort(a.String()).Port()
}

// nameservers lists the resolvers of a resolv.conf as host:53.
func nameservers(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "nameserver" {
			out = append(out, net.JoinHostPort(fields[1], "53"))
		}
	}
	return out
}

// originalDst is where a redirected connection was going (SO_ORIGINAL_DST).
func originalDst(c net.Conn) (netip.AddrPort, error) {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	var dst netip.AddrPort
	var serr error
	err = rc.Control(func(fd uintptr) {
		var sa unix.RawSockaddrInet6 // large enough for either family
		size := uint32(unsafe.Sizeof(sa))
		level := unix.SOL_IP
		if netip.MustParseAddrPort(c.LocalAddr().String()).Addr().Is6() {
			level = unix.SOL_IPV6
		}
		const soOriginalDst = 80 // SO_ORIGINAL_DST, IP6T_SO_ORIGINAL_DST
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, uintptr(level), soOriginalDst,
			uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&size)), 0)
		if errno != 0 {
			serr = errno
			return
		}
		b := (*[unsafe.Sizeof(sa)]byte)(unsafe.Pointer(&sa))
		p := binary.BigEndian.Uint16(b[2:4])
		if sa.Family == unix.AF_INET {
			dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), p)
		} else {
			dst = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), p)
		}
	})
	if err == nil {
		err = serr
	}
	return dst, err
}

// refuseUDP reports and drops the datagrams redirected to pc (on port p);
// where each was going is found in the conntrack table.
func (e *enforcer) refuseUDP(pc *net.UDPConn, p uint16) {
	buf := make([]byte, 65535)
	for {
		n, from, err := pc.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		if string(buf[:n]) == flushSentinel {
			select {
			case e.flushed <- struct{}{}:
			default:
			}
			continue
		}
		dst, ok := udpOriginalDst(from, p)
		host := "unknown"
		if ok {
			host = dst.Addr().String()
		}
		e.report(Denial{Host: host, Port: int(dst.Port()), Proto: "udp", Reason: reasonNotAllowed})
	}
}

func udpOriginalDst(from netip.AddrPort, p uint16) (netip.AddrPort, bool) {
	family := netlink.InetFamily(unix.AF_INET)
	if from.Addr().Unmap().Is6() {
		family = unix.AF_INET6
	}
	flows, err := netlink.ConntrackTableList(netlink.ConntrackTable, family)
	if err != nil {
		return netip.AddrPort{}, false
	}
	src := net.IP(from.Addr().Unmap().AsSlice())
	for _, f := range flows {
		if f.Forward.Protocol == unix.IPPROTO_UDP && f.Forward.SrcPort == from.Port() &&
			f.Forward.SrcIP.Equal(src) && f.Reverse.SrcPort == p {
			dst, ok := netip.AddrFromSlice(f.Forward.DstIP)
			return netip.AddrPortFrom(dst.Unmap(), f.Forward.DstPort), ok
		}
	}
	return netip.AddrPort{}, false
}
