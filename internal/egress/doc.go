// Package egress enforces a sandbox's egress policy (package policy parses
// and decides it): which destinations its programs may reach over the
// network. The enforcer (Main, the sanddune-egress binary) programs
// nftables in the sandbox's network namespace so that every TCP
// connection reaches its transparent proxy (checked by original
// destination, then TLS SNI or HTTP Host), every DNS question its DNS
// server (allowed and hosts names only), and every other UDP datagram its
// refusal; each refusal is a JSON line (Denial). The plugin side finds the
// binary (Binary), follows its refusals (Monitor) and, for a namespace
// with no way out (bubblewrap), dials for it over a relay (ServeRelay).
package egress
