package jsonschema

import (
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// draft4to7 reports whether a document's $schema is draft 4, 6 or 7.
func draft4to7(doc any) bool {
	m, _ := doc.(map[string]any)
	s, _ := m["$schema"].(string)
	for _, d := range []string{"draft-04", "draft-06", "draft-07"} {
		if strings.Contains(s, "json-schema.org/"+d+"/schema") {
			return true
		}
	}
	return false
}

// formats check a string; a format not named here is not checked.
var formats = map[string]func(string) bool{
	"date-time": func(s string) bool { _, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s)); return err == nil },
	"date":      func(s string) bool { _, err := time.Parse(time.DateOnly, s); return err == nil },
	"time": func(s string) bool {
		_, err := time.Parse("15:04:05.999999999Z07:00", strings.ToUpper(s))
		return err == nil
	},
	"email": func(s string) bool {
		local, domain, ok := strings.Cut(s, "@")
		return ok && local != "" && !strings.ContainsAny(s, " \t\r\n") && isHostname(domain)
	},
	"hostname": isHostname,
	"ipv4":     func(s string) bool { a, err := netip.ParseAddr(s); return err == nil && a.Is4() },
	"ipv6":     func(s string) bool { a, err := netip.ParseAddr(s); return err == nil && a.Is6() && a.Zone() == "" },
	"uri":      func(s string) bool { u, err := url.Parse(s); return err == nil && u.IsAbs() },
	"uri-reference": func(s string) bool {
		_, err := url.Parse(s)
		return err == nil
	},
	"uuid":  isUUID,
	"regex": func(s string) bool { _, err := regexp.Compile(s); return err == nil },
}

// isUUID: 8-4-4-4-12 hexadecimal digits.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if r != '-' {
				return false
			}
		} else if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

func isHostname(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return false
			}
		}
	}
	return true
}
