package egress

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/missingstudio/sanddune/internal/egress/policy"
)

// Denial is one refusal, as the enforcer reports it (a JSON line); it
// converts to sdk.EgressDenial (this package leaves the SDK out of the
// enforcer's binary).
type Denial struct {
	Host   string `json:"host"`
	Port   int    `json:"port,omitempty"`
	Proto  string `json:"proto"`
	Reason string `json:"reason"`
}

// reasonNotAllowed is why everything outside the policy is refused.
const reasonNotAllowed = "not in egress.allow"

// sniffWait is how long a new connection may stay silent before it is
// decided by its address alone (a protocol where the server speaks first).
const sniffWait = time.Second

// enforcer applies a policy.Policy to the connections and DNS questions the
// sandbox's network namespace sends it.
type enforcer struct {
	policy policy.Policy
	// origDst is where an intercepted connection was going.
	origDst func(net.Conn) (netip.AddrPort, error)
	// dial reaches the outside (its sockets are not intercepted).
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// upstream are the DNS servers allowed names are resolved by (host:port).
	upstream []string
	report   func(Denial)

	mu    sync.Mutex
	known map[netip.Addr][]string // addresses DNS answered, and for which names

	udp     []*net.UDPConn // where other UDP is refused (Linux)
	flushed chan struct{}  // flushUDP's own datagram was read
}

// serveTCP handles the connections of l until it is closed.
func (e *enforcer) serveTCP(ctx context.Context, l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go e.handleTCP(ctx, c)
	}
}

// handleTCP decides an intercepted connection and, if allowed, relays it.
func (e *enforcer) handleTCP(ctx context.Context, c net.Conn) {
	defer c.Close()
	dst, err := e.origDst(c)
	if err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(sniffWait))
	name, head := sniff(c)
	_ = c.SetReadDeadline(time.Time{})
	dial, ok := e.policy.Conn(dst, name, e.namesOf(dst.Addr()))
	if !ok {
		host := name
		if host == "" {
			host = dst.Addr().Unmap().String()
		}
		e.report(Denial{Host: host, Port: int(dst.Port()), Proto: "tcp", Reason: reasonNotAllowed})
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // the client sees a reset, not an orderly end
		}
		return
	}
	up, err := e.dial(ctx, "tcp", dial)
	if err != nil {
		return
	}
	defer up.Close()
	if _, err := up.Write(head); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(c, up)
		closeWrite(c)
		close(done)
	}()
	_, _ = io.Copy(up, c)
	closeWrite(up)
	<-done
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// namesOf lists the names DNS answered with addr.
func (e *enforcer) namesOf(addr netip.Addr) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.known[addr.Unmap()]
}

// learn records that DNS answered name with addrs.
func (e *enforcer) learn(name string, addrs []netip.Addr) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.known == nil {
		e.known = map[netip.Addr][]string{}
	}
	for _, a := range addrs {
		a = a.Unmap()
		if !contains(e.known[a], name) {
			e.known[a] = append(e.known[a], name)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// reporter writes each denial as a JSON line to w, once a second at most
// for the same one (a client retrying, A and AAAA questions).
func reporter(w io.Writer) func(Denial) {
	var mu sync.Mutex
	last := map[Denial]time.Time{}
	enc := json.NewEncoder(w)
	return func(d Denial) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if t, ok := last[d]; ok && now.Sub(t) < time.Second {
			return
		}
		last[d] = now
		_ = enc.Encode(d)
	}
}

// readyLine is what the enforcer prints once its rules are in place.
const readyLine = `{"ready":true}`

// ReadEvents reads an enforcer's output: ready is called once it is in
// place, report for each denial after. It returns when r ends, with an
// error when the enforcer ended before it was ready (its last lines say
// why).
func ReadEvents(r io.Reader, ready func(), report func(Denial)) error {
	sc := bufio.NewScanner(r)
	isReady := false
	var last []string // what it said before failing
	for sc.Scan() {
		var line struct {
			Ready bool   `json:"ready"`
			Error string `json:"error"`
			Denial
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil || line.Error != "" {
			if line.Error == "" {
				line.Error = strings.TrimSpace(sc.Text())
			}
			last = append(last[max(0, len(last)-4):], line.Error)
			continue
		}
		switch {
		case line.Ready && !isReady:
			isReady = true
			ready()
		case line.Proto != "":
			report(line.Denial)
		}
	}
	if isReady {
		return nil
	}
	if len(last) > 0 {
		return errors.New("the egress enforcer failed: " + strings.Join(last, "; "))
	}
	return errors.New("the egress enforcer ended before it was ready")
}
