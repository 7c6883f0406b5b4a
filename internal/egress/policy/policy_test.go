package policy

import (
	"net/netip"
	"strings"
	"testing"
)

func mustParse(t *testing.T, allow []string, hosts map[string]string) Policy {
	t.Helper()
	p, errs := Parse(allow, hosts)
	if len(errs) > 0 {
		t.Fatalf("Parse: %v", errs)
	}
	return p
}

func TestParseRejectsEachMalformedEntryByName(t *testing.T) {
	_, errs := Parse(
		[]string{"ok.example.com", "foo:99999", "foo:http", "", "10.0.0.0/33", "300.1.2.3", "bad_-.", "*.com.", "*", "[::1", "[example.com]:443", "a..b", "[fd00::]/8:443", "fd00::1:443x", "https://api.test:8443/v1", "registry.npmjs.org/"},
		map[string]string{"x.test": "not-an-ip", "*.wild.test": "10.0.0.1", "good.test": "10.0.0.2"},
	)
	want := []string{
		`egress.allow entry "foo:99999": port out of range`,
		`egress.allow entry "foo:http": port "http" is not a number`,
		`egress.allow entry "": empty entry`,
		`egress.allow entry "10.0.0.0/33": not a valid CIDR`,
		`egress.allow entry "300.1.2.3": not a valid IP address`,
		`egress.allow entry "bad_-.": not a valid host name`,
		`egress.allow entry "*.com.": a wildcard needs a domain with a dot`,
		`egress.allow entry "*": not a valid host name`,
		`egress.allow entry "[::1": missing ]`,
		`egress.allow entry "[example.com]:443": only an IPv6 address or CIDR goes in brackets`,
		`egress.allow entry "a..b": not a valid host name`,
		`egress.allow entry "[fd00::]/8:443": unexpected`,
		`egress.allow entry "fd00::1:443x": not a valid IP address`,
		`egress.allow entry "https://api.test:8443/v1": a URL: write its host, and :port if not 443 or 80 ("api.test:8443")`,
		`egress.allow entry "registry.npmjs.org/": a path after the host: write the host only ("registry.npmjs.org")`,
		`egress.hosts entry "*.wild.test": a wildcard cannot have a fixed address`,
		`egress.hosts entry "x.test": "not-an-ip" is not an IP address`,
	}
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d: %v", len(errs), len(want), errs)
	}
	for i, err := range errs {
		if !strings.HasPrefix(err.Error(), want[i]) {
			t.Errorf("error %d = %q, want prefix %q", i, err, want[i])
		}
	}
}

func TestNamesAllow443And80UnlessAPortIsGiven(t *testing.T) {
	p := mustParse(t, []string{"API.example.com", "git.example.com:22", "*.npm.test"}, nil)
	for _, c := range []struct {
		name string
		port uint16
		want bool
	}{
		{"api.example.com", 443, true},
		{"api.example.com.", 80, true},
		{"api.example.com", 8443, false},
		{"git.example.com", 22, true},
		{"git.example.com", 443, false},
		{"registry.npm.test", 443, true},
		{"a.b.npm.test", 80, true},
		{"npm.test", 443, false},
		{"evilnpm.test", 443, false},
		{"example.com", 443, false},
	} {
		if got := p.AllowsName(c.name, c.port); got != c.want {
			t.Errorf("AllowsName(%q, %d) = %v, want %v", c.name, c.port, got, c.want)
		}
	}
}

func TestAddressesAllowEveryPortUnlessAPortIsGiven(t *testing.T) {
	p := mustParse(t, []string{"10.20.0.0/16", "192.0.2.7:8080", "[2001:db8::1]:443", "2001:db8:1::/48"}, nil)
	for _, c := range []struct {
		dst  string
		want bool
	}{
		{"10.20.3.4:1", true},
		{"10.20.3.4:65535", true},
		{"10.21.0.1:443", false},
		{"192.0.2.7:8080", true},
		{"[::ffff:192.0.2.7]:8080", true},
		{"192.0.2.7:8081", false},
		{"[2001:db8::1]:443", true},
		{"[2001:db8::1]:80", false},
		{"[2001:db8:1::9]:22", true},
	} {
		if got := p.AllowsAddr(netip.MustParseAddrPort(c.dst)); got != c.want {
			t.Errorf("AllowsAddr(%s) = %v, want %v", c.dst, got, c.want)
		}
	}
}

func TestDNSAnswersOnlyAllowedAndHostsNames(t *testing.T) {
	p := mustParse(t, []string{"api.example.com:8443", "*.npm.test", "10.0.0.0/8"}, map[string]string{"Mirror.Test": "172.17.0.1"})
	for name, want := range map[string]bool{
		"api.example.com": true, "x.npm.test": true, "mirror.test.": true,
		"example.com": false, "npm.test": false, "10.0.0.1": false, "exfil.attacker.test": false,
	} {
		if got := p.Resolves(name); got != want {
			t.Errorf("Resolves(%q) = %v, want %v", name, got, want)
		}
	}
	if addr, ok := p.Host("MIRROR.test"); !ok || addr != netip.MustParseAddr("172.17.0.1") {
		t.Errorf("Host(mirror.test) = %v, %v", addr, ok)
	}
}

func TestConnChecksTheNameTheClientAskedFor(t *testing.T) {
	p := mustParse(t,
		[]string{"ok.test:18080", "api.example.com", "10.9.0.0/16"},
		map[string]string{"ok.test": "172.17.0.1"})
	for _, c := range []struct {
		what  string
		dst   string
		name  string
		known []string
		dial  string
		ok    bool
	}{
		{"hosts address, listed port, plain TCP", "172.17.0.1:18080", "", nil, "172.17.0.1:18080", true},
		{"hosts address, other port", "172.17.0.1:18081", "", nil, "", false},
		{"unlisted address", "172.17.0.2:18080", "", nil, "", false},
		{"address DNS gave an allowed name", "203.0.113.5:443", "", []string{"api.example.com"}, "203.0.113.5:443", true},
		{"address DNS gave an allowed name, other port", "203.0.113.5:22", "", []string{"api.example.com"}, "", false},
		{"allowed SNI at its own address", "203.0.113.5:443", "api.example.com", []string{"api.example.com"}, "203.0.113.5:443", true},
		{"allowed SNI at another address goes to the name", "198.51.100.1:443", "api.example.com", nil, "api.example.com:443", true},
		{"allowed hosts name at another address goes to its fixed address", "198.51.100.1:18080", "ok.test", nil, "172.17.0.1:18080", true},
		{"unlisted SNI at an allowed name's address", "203.0.113.5:443", "evil.test", []string{"api.example.com"}, "", false},
		{"allowed CIDR whatever the name", "10.9.1.1:5432", "evil.test", nil, "10.9.1.1:5432", true},
	} {
		dial, ok := p.Conn(netip.MustParseAddrPort(c.dst), c.name, c.known)
		if dial != c.dial || ok != c.ok {
			t.Errorf("%s: Conn = %q, %v; want %q, %v", c.what, dial, ok, c.dial, c.ok)
		}
	}
}

func TestZeroPolicyAllowsNothing(t *testing.T) {
	var p Policy
	if _, ok := p.Conn(netip.MustParseAddrPort("127.0.0.1:80"), "localhost", nil); ok || p.Resolves("localhost") {
		t.Fatal("zero Policy allowed something")
	}
}
