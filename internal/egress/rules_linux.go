package egress

import (
	"encoding/binary"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/missingstudio/sanddune/internal/egress/policy"
)

// ipsDstNAT is conntrack status IPS_DST_NAT.
const ipsDstNAT = 1 << 5

// ports are where the rules send what they intercept.
type ports struct {
	tcp, udp, dnsUDP, dnsTCP uint16
}

// installRules programs the network namespace's nftables (table inet
// sanddune_egress): DNS (UDP and TCP port 53, whatever the server) goes to
// the enforcer's DNS server, traffic to the namespace's own addresses stays
// as it is, and so (direct) does traffic to the policy's IP and CIDR
// entries; every other TCP connection goes to the enforcer's proxy and
// every other UDP datagram to its reporting socket; anything else going
// out (ICMP, other protocols) is dropped.
func installRules(p policy.Policy, to ports, direct bool) error {
	c, err := nftables.New()
	if err != nil {
		return err
	}
	table := c.AddTable(&nftables.Table{Family: nftables.TableFamilyINet, Name: "sanddune_egress"})
	// Before the engine's own DNAT (docker's resolver at 127.0.0.11).
	nat := c.AddChain(&nftables.Chain{
		Name: "nat", Table: table, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityRef(-150),
	})
	drop := nftables.ChainPolicyDrop
	filter := c.AddChain(&nftables.Chain{
		Name: "filter", Table: table, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter, Policy: &drop,
	})
	add := func(chain *nftables.Chain, exprs ...[]expr.Any) {
		var all []expr.Any
		for _, e := range exprs {
			all = append(all, e...)
		}
		c.AddRule(&nftables.Rule{Table: table, Chain: chain, Exprs: all})
	}
	ret := verdict(expr.VerdictReturn)
	accept := verdict(expr.VerdictAccept)

	add(nat, markIs(), ret)
	add(nat, l4(unix.IPPROTO_UDP), dport(53), redirect(to.dnsUDP))
	add(nat, l4(unix.IPPROTO_TCP), dport(53), redirect(to.dnsTCP))
	add(nat, local(), ret)
	add(filter, markIs(), accept)
	add(filter, local(), accept)
	add(filter, redirected(), accept) // the hook's output device is still the original one
	add(filter, established(), accept)
	for _, r := range p.Nets() {
		if !direct {
			break
		}
		if r.Port == 0 {
			add(nat, prefix(r.Prefix), ret)
			add(filter, prefix(r.Prefix), accept)
			continue
		}
		for _, proto := range []byte{unix.IPPROTO_TCP, unix.IPPROTO_UDP} {
			add(nat, prefix(r.Prefix), l4(proto), dport(r.Port), ret)
			add(filter, prefix(r.Prefix), l4(proto), dport(r.Port), accept)
		}
	}
	add(nat, l4(unix.IPPROTO_TCP), redirect(to.tcp))
	add(nat, l4(unix.IPPROTO_UDP), redirect(to.udp))
	return c.Flush()
}

func verdict(kind expr.VerdictKind) []expr.Any { return []expr.Any{&expr.Verdict{Kind: kind}} }

func eq(data []byte) *expr.Cmp { return &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: data} }

func markIs() []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyMARK, Register: 1}, eq(binaryutil.NativeEndian.PutUint32(Mark))}
}

// local matches a destination that is an address of the namespace.
func local() []expr.Any {
	return []expr.Any{
		&expr.Fib{Register: 1, ResultADDRTYPE: true, FlagDADDR: true},
		eq(binaryutil.NativeEndian.PutUint32(unix.RTN_LOCAL)),
	}
}

func l4(proto byte) []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1}, eq([]byte{proto})}
}

func dport(port uint16) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		eq(binary.BigEndian.AppendUint16(nil, port)),
	}
}

func redirect(port uint16) []expr.Any {
	return []expr.Any{
		&expr.Immediate{Register: 1, Data: binary.BigEndian.AppendUint16(nil, port)},
		&expr.Redir{RegisterProtoMin: 1},
	}
}

func established() []expr.Any {
	return ctHas(expr.CtKeySTATE, expr.CtStateBitESTABLISHED|expr.CtStateBitRELATED)
}

// redirected matches what the nat chain sent to the enforcer (nothing in
// the sandbox can add a DNAT of its own).
func redirected() []expr.Any { return ctHas(expr.CtKeySTATUS, ipsDstNAT) }

func ctHas(key expr.CtKey, bits uint32) []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: 1, Key: key},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(bits), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)},
	}
}

// prefix matches a destination in p.
func prefix(p netip.Prefix) []expr.Any {
	family, offset := byte(unix.NFPROTO_IPV4), uint32(16)
	if p.Addr().Is6() {
		family, offset = unix.NFPROTO_IPV6, 24
	}
	addr := p.Addr().AsSlice()
	mask := make([]byte, len(addr))
	for i := range p.Bits() {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1}, eq([]byte{family}),
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: uint32(len(addr))},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: uint32(len(addr)), Mask: mask, Xor: make([]byte, len(addr))},
		eq(addr),
	}
}
