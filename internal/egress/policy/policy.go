// Package policy parses and decides a sandbox's egress policy (package
// egress enforces it): which destinations its programs may reach over the
// network. The host checks a config's entries with it, without linking
// the enforcer.
package policy

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Policy is a parsed egress policy. Its zero value allows nothing.
type Policy struct {
	names []nameRule
	nets  []Net
	hosts map[string]netip.Addr
}

// A name entry: an exact name, or a suffix ".domain" for "*.domain".
type nameRule struct {
	name     string
	wildcard bool
	ports    []uint16
}

// Net is an IP or CIDR entry; port 0 allows every port.
type Net struct {
	Prefix netip.Prefix
	Port   uint16
}

// Nets are the policy's IP and CIDR entries.
func (p Policy) Nets() []Net { return p.nets }

// defaultNamePorts are the ports a name entry without a port allows.
var defaultNamePorts = []uint16{443, 80}

// Parse validates the entries of an egress policy: allow entries are a name,
// "*.domain" (any subdomain, not the domain itself), an IP or a CIDR, each
// optionally with ":port" (an IPv6 address or CIDR in brackets when a port
// follows). A name without a port allows 443 and 80; an IP or CIDR without a
// port allows every port. hosts maps a name to the fixed IP the sandbox
// resolves it to. Every malformed entry is an error naming it.
func Parse(allow []string, hosts map[string]string) (Policy, []error) {
	var p Policy
	var errs []error
	for _, entry := range allow {
		if err := p.add(entry); err != nil {
			errs = append(errs, fmt.Errorf("egress.allow entry %q: %w", entry, err))
		}
	}
	names := make([]string, 0, len(hosts))
	for name := range hosts {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		n, err := canonicalName(name)
		if err == nil && strings.HasPrefix(n, "*.") {
			err = fmt.Errorf("a wildcard cannot have a fixed address")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("egress.hosts entry %q: %w", name, err))
			continue
		}
		addr, err := netip.ParseAddr(hosts[name])
		if err != nil || addr.Zone() != "" {
			errs = append(errs, fmt.Errorf("egress.hosts entry %q: %q is not an IP address", name, hosts[name]))
			continue
		}
		if p.hosts == nil {
			p.hosts = map[string]netip.Addr{}
		}
		p.hosts[n] = addr.Unmap()
	}
	return p, errs
}

func (p *Policy) add(entry string) error {
	host, port, err := splitEntry(strings.TrimSpace(entry))
	if err != nil {
		return err
	}
	if prefix, ok, err := parseNet(host); ok {
		if err != nil {
			return err
		}
		p.nets = append(p.nets, Net{Prefix: prefix, Port: port})
		return nil
	}
	name, err := canonicalName(host)
	if err != nil {
		return err
	}
	r := nameRule{name: name, ports: defaultNamePorts}
	if port != 0 {
		r.ports = []uint16{port}
	}
	if strings.HasPrefix(name, "*.") {
		r.name, r.wildcard = name[1:], true
	}
	p.names = append(p.names, r)
	return nil
}

// splitEntry splits "host[:port]" (IPv6 in brackets when a port follows);
// port 0 means none was given.
func splitEntry(entry string) (string, uint16, error) {
	if entry == "" {
		return "", 0, fmt.Errorf("empty entry")
	}
	if u, err := url.Parse(entry); err == nil && u.Scheme != "" && u.Host != "" {
		return "", 0, fmt.Errorf("a URL: write its host, and :port if not 443 or 80 (%q)", u.Host)
	}
	if before, _, ok := strings.Cut(entry, "/"); ok {
		if _, isNet, _ := parseNet(before); !isNet {
			return "", 0, fmt.Errorf("a path after the host: write the host only (%q)", before)
		}
	}
	host, portText := entry, ""
	switch {
	case strings.HasPrefix(entry, "["):
		end := strings.Index(entry, "]")
		if end < 0 {
			return "", 0, fmt.Errorf("missing ] after an IPv6 address")
		}
		host, rest := entry[1:end], entry[end+1:]
		if rest != "" && !strings.HasPrefix(rest, ":") {
			return "", 0, fmt.Errorf("unexpected %q after ]", rest)
		}
		if _, ok, _ := parseNet(host); !ok || !strings.Contains(host, ":") {
			return "", 0, fmt.Errorf("only an IPv6 address or CIDR goes in brackets")
		}
		if rest == "" {
			return host, 0, nil
		}
		port, err := parsePort(rest[1:])
		return host, port, err
	case strings.Count(entry, ":") == 1:
		host, portText, _ = strings.Cut(entry, ":")
		port, err := parsePort(portText)
		return host, port, err
	}
	return host, 0, nil
}

func parsePort(text string) (uint16, error) {
	n, err := strconv.Atoi(text)
	if err != nil {
		return 0, fmt.Errorf("port %q is not a number", text)
	}
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("port out of range (1-65535)")
	}
	return uint16(n), nil
}

// parseNet parses an IP or CIDR; ok says the text is meant as one (digits
// and dots, or contains a colon or slash), so a bad one is an error rather
// than a name.
func parseNet(text string) (netip.Prefix, bool, error) {
	if !strings.ContainsAny(text, ":/") && strings.Trim(text, "0123456789.") != "" {
		return netip.Prefix{}, false, nil
	}
	if strings.Contains(text, "/") {
		prefix, err := netip.ParsePrefix(text)
		if err != nil {
			return prefix, true, fmt.Errorf("not a valid CIDR")
		}
		if prefix.Addr().Is4In6() {
			prefix = netip.PrefixFrom(prefix.Addr().Unmap(), prefix.Bits()-96)
		}
		return prefix.Masked(), true, nil
	}
	addr, err := netip.ParseAddr(text)
	if err != nil || addr.Zone() != "" {
		return netip.Prefix{}, true, fmt.Errorf("not a valid IP address")
	}
	addr = addr.Unmap()
	return netip.PrefixFrom(addr, addr.BitLen()), true, nil
}

// canonicalName lowercases a DNS name (or "*.domain") and checks its labels.
func canonicalName(text string) (string, error) {
	name := strings.TrimSuffix(strings.ToLower(text), ".")
	labels := strings.Split(strings.TrimPrefix(name, "*."), ".")
	if name == "" || len(name) > 253 {
		return "", fmt.Errorf("not a valid host name")
	}
	if strings.HasPrefix(name, "*.") && len(labels) < 2 {
		return "", fmt.Errorf("a wildcard needs a domain with a dot, like *.example.com")
	}
	for _, label := range labels {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") ||
			strings.Trim(label, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return "", fmt.Errorf("not a valid host name (a name, *.domain, an IP or a CIDR, optionally with :port)")
		}
	}
	return name, nil
}

// AllowsAddr reports whether an IP or CIDR entry allows dst.
func (p Policy) AllowsAddr(dst netip.AddrPort) bool {
	addr := dst.Addr().Unmap()
	for _, r := range p.nets {
		if r.Prefix.Contains(addr) && (r.Port == 0 || r.Port == dst.Port()) {
			return true
		}
	}
	return false
}

// AllowsName reports whether a name entry allows name on port.
func (p Policy) AllowsName(name string, port uint16) bool {
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	for _, r := range p.names {
		if r.matches(name) && slices.Contains(r.ports, port) {
			return true
		}
	}
	return false
}

// Resolves reports whether the sandbox's DNS answers for name: a hosts name
// or a name some entry allows (on any port).
func (p Policy) Resolves(name string) bool {
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if _, ok := p.hosts[name]; ok {
		return true
	}
	for _, r := range p.names {
		if r.matches(name) {
			return true
		}
	}
	return false
}

// Host returns the fixed address hosts gives name.
func (p Policy) Host(name string) (netip.Addr, bool) {
	addr, ok := p.hosts[strings.TrimSuffix(strings.ToLower(name), ".")]
	return addr, ok
}

func (r nameRule) matches(name string) bool {
	if r.wildcard {
		return strings.HasSuffix(name, r.name) && len(name) > len(r.name)
	}
	return name == r.name
}

// Conn decides a TCP connection to dst and returns the address to dial.
// name is the host the client asked for (TLS SNI or HTTP Host), "" when it
// named none; known are the names the sandbox's DNS answered with dst's
// address. An address an IP entry allows is reached whatever the name.
// Otherwise a named connection needs its name allowed and goes to that name
// (dst when dst is that name's address), so an allowed name cannot carry a
// connection to another host; an unnamed one needs dst to be the address of
// an allowed name (from hosts, or known).
func (p Policy) Conn(dst netip.AddrPort, name string, known []string) (dial string, ok bool) {
	if p.AllowsAddr(dst) {
		return dst.String(), true
	}
	port := dst.Port()
	addr := dst.Addr().Unmap()
	if name != "" {
		if !p.AllowsName(name, port) {
			return "", false
		}
		if fixed, ok := p.Host(name); ok {
			return netip.AddrPortFrom(fixed, port).String(), true
		}
		if slices.Contains(known, strings.TrimSuffix(strings.ToLower(name), ".")) {
			return dst.String(), true
		}
		return net.JoinHostPort(name, strconv.Itoa(int(port))), true
	}
	for host, fixed := range p.hosts {
		if fixed == addr && p.AllowsName(host, port) {
			return dst.String(), true
		}
	}
	for _, n := range known {
		if p.AllowsName(n, port) {
			return dst.String(), true
		}
	}
	return "", false
}
