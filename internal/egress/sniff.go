package egress

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"strings"
)

// maxSniff bounds what is read before a connection is decided.
const maxSniff = 16 << 10

// sniff reads the start of a client's stream until it names a host (TLS
// SNI, HTTP Host), shows it will not, or r fails (a read deadline: a
// protocol where the server speaks first). It returns the name, "" when
// none, and every byte read, to be forwarded.
func sniff(r io.Reader) (name string, head []byte) {
	buf := make([]byte, 0, 4096)
	for len(buf) < maxSniff {
		n, err := r.Read(buf[len(buf):min(cap(buf), maxSniff)])
		buf = buf[:len(buf)+n]
		if name, done := nameIn(buf); done {
			return name, buf
		}
		if err != nil {
			return "", buf
		}
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
		}
	}
	return "", buf
}

// nameIn finds the host a stream's start names; done is false while more
// bytes could still name one.
func nameIn(b []byte) (name string, done bool) {
	if len(b) == 0 {
		return "", false
	}
	if b[0] == 0x16 { // TLS handshake record
		return serverName(b)
	}
	return httpHost(b)
}

// serverName parses the SNI of a TLS ClientHello, which may span records.
func serverName(b []byte) (string, bool) {
	var hs []byte // handshake bytes, records joined
	for len(b) >= 5 {
		if b[0] != 0x16 {
			return "", true
		}
		n := int(binary.BigEndian.Uint16(b[3:5]))
		if len(b) < 5+n {
			break
		}
		hs = append(hs, b[5:5+n]...)
		b = b[5+n:]
	}
	if len(hs) < 4 {
		return "", false
	}
	if hs[0] != 1 { // not a ClientHello
		return "", true
	}
	n := int(hs[1])<<16 | int(hs[2])<<8 | int(hs[3])
	if len(hs) < 4+n {
		return "", false
	}
	p := parser(hs[4 : 4+n])
	p.skip(2 + 32)       // version, random
	p.skip(int(p.u8()))  // session id
	p.skip(int(p.u16())) // cipher suites
	p.skip(int(p.u8()))  // compression methods
	exts := parser(p.bytes(int(p.u16())))
	for len(exts) >= 4 {
		typ, body := exts.u16(), parser(exts.bytes(int(exts.u16())))
		if typ != 0 { // server_name
			continue
		}
		list := parser(body.bytes(int(body.u16())))
		for len(list) >= 3 {
			kind, host := list.u8(), list.bytes(int(list.u16()))
			if kind == 0 {
				return string(host), true
			}
		}
	}
	return "", true
}

// parser reads big-endian fields; a short read leaves it empty.
type parser []byte

func (p *parser) bytes(n int) []byte {
	if n > len(*p) {
		*p = nil
		return nil
	}
	b := (*p)[:n]
	*p = (*p)[n:]
	return b
}

func (p *parser) skip(n int) { p.bytes(n) }

func (p *parser) u8() byte {
	if b := p.bytes(1); b != nil {
		return b[0]
	}
	return 0
}

func (p *parser) u16() uint16 {
	if b := p.bytes(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

// httpHost parses the Host header of an HTTP/1 request.
func httpHost(b []byte) (string, bool) {
	sp := bytes.IndexByte(b, ' ')
	if sp < 0 {
		return "", len(b) > 16 || bytes.ContainsAny(b, "\r\n")
	}
	if sp == 0 || sp > 16 || strings.Trim(string(b[:sp]), "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		return "", true // not a request line
	}
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		return "", false
	}
	for _, line := range strings.Split(string(b[:end]), "\r\n")[1:] {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.EqualFold(strings.TrimSpace(k), "host") {
			host := strings.TrimSpace(v)
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			return strings.Trim(host, "[]"), true
		}
	}
	return "", true
}
