package egress

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// upstreamWait bounds one forwarded DNS question.
const upstreamWait = 5 * time.Second

// serveDNS answers the questions sent to pc until it is closed.
func (e *enforcer) serveDNS(ctx context.Context, pc net.PacketConn) {
	buf := make([]byte, 65535)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		q := append([]byte(nil), buf[:n]...)
		go func() {
			if resp := e.answer(ctx, q, "udp"); resp != nil {
				_, _ = pc.WriteTo(resp, from)
			}
		}()
	}
}

// serveDNSTCP answers the DNS-over-TCP connections of l until it is closed.
func (e *enforcer) serveDNSTCP(ctx context.Context, l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			for {
				_ = c.SetDeadline(time.Now().Add(30 * time.Second))
				q, err := readFramed(c)
				if err != nil {
					return
				}
				resp := e.answer(ctx, q, "tcp")
				if resp == nil || writeFramed(c, resp) != nil {
					return
				}
			}
		}()
	}
}

func readFramed(r io.Reader) ([]byte, error) {
	var n [2]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint16(n[:]))
	_, err := io.ReadFull(r, b)
	return b, err
}

func writeFramed(w io.Writer, b []byte) error {
	_, err := w.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(b))), b...))
	return err
}

// answer answers one DNS query: a hosts name with its fixed address, an
// allowed name as the upstream resolver does, anything else NXDOMAIN
// (reported). It returns nil for a message that is not a query.
func (e *enforcer) answer(ctx context.Context, query []byte, network string) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil || h.Response {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return reply(h, nil, dnsmessage.RCodeFormatError, netip.Addr{})
	}
	name := strings.TrimSuffix(strings.ToLower(q.Name.String()), ".")
	if fixed, ok := e.policy.Host(name); ok {
		return reply(h, &q, dnsmessage.RCodeSuccess, fixed)
	}
	if !e.policy.Resolves(name) {
		e.report(Denial{Host: name, Proto: "dns", Reason: reasonNotAllowed})
		return reply(h, &q, dnsmessage.RCodeNameError, netip.Addr{})
	}
	resp, err := e.forward(ctx, query, network)
	if err != nil {
		return reply(h, &q, dnsmessage.RCodeServerFailure, netip.Addr{})
	}
	e.learn(name, answerAddrs(resp))
	return resp
}

// forward asks the upstream resolvers, in turn, until one answers.
func (e *enforcer) forward(ctx context.Context, query []byte, network string) ([]byte, error) {
	err := error(&net.DNSError{Err: "no upstream resolver", IsNotFound: true})
	for _, server := range e.upstream {
		var resp []byte
		if resp, err = e.exchange(ctx, server, query, network); err == nil {
			return resp, nil
		}
	}
	return nil, err
}

func (e *enforcer) exchange(ctx context.Context, server string, query []byte, network string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, upstreamWait)
	defer cancel()
	c, err := e.dial(ctx, network, server)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	_ = c.SetDeadline(deadline)
	if network == "tcp" {
		if err := writeFramed(c, query); err != nil {
			return nil, err
		}
		return readFramed(c)
	}
	if _, err := c.Write(query); err != nil {
		return nil, err
	}
	buf := make([]byte, 65535)
	n, err := c.Read(buf)
	return buf[:n], err
}

// reply builds the answer to a question: addr as its record when it fits
// the question's type, else no records.
func reply(h dnsmessage.Header, q *dnsmessage.Question, rcode dnsmessage.RCode, addr netip.Addr) []byte {
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{
		ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired,
		RecursionAvailable: true, RCode: rcode,
	})
	b.EnableCompression()
	_ = b.StartQuestions()
	if q == nil {
		msg, _ := b.Finish()
		return msg
	}
	_ = b.Question(*q)
	_ = b.StartAnswers()
	rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
	switch {
	case q.Type == dnsmessage.TypeA && addr.Is4():
		_ = b.AResource(rh, dnsmessage.AResource{A: addr.As4()})
	case q.Type == dnsmessage.TypeAAAA && addr.Is6():
		_ = b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: addr.As16()})
	}
	msg, _ := b.Finish()
	return msg
}

// answerAddrs lists the A and AAAA records of a DNS response.
func answerAddrs(resp []byte) []netip.Addr {
	var p dnsmessage.Parser
	if _, err := p.Start(resp); err != nil {
		return nil
	}
	if p.SkipAllQuestions() != nil {
		return nil
	}
	var addrs []netip.Addr
	for {
		h, err := p.AnswerHeader()
		if err != nil {
			return addrs
		}
		switch h.Type {
		case dnsmessage.TypeA:
			if r, err := p.AResource(); err == nil {
				addrs = append(addrs, netip.AddrFrom4(r.A))
			}
		case dnsmessage.TypeAAAA:
			if r, err := p.AAAAResource(); err == nil {
				addrs = append(addrs, netip.AddrFrom16(r.AAAA))
			}
		default:
			if p.SkipAnswer() != nil {
				return addrs
			}
		}
	}
}
