package egress

import (
	"context"
	"io"
	"net"
	"testing"
)

func TestRelayDialsOnTheHostAndPassesRefusals(t *testing.T) {
	backend := greeter(t, "hello")
	host, child, err := RelayPair()
	if err != nil {
		t.Fatal(err)
	}
	denied := make(chan Denial, 1)
	go ServeRelay(host, func(d Denial) { denied <- d })
	c, err := net.FileConn(child)
	child.Close()
	if err != nil {
		t.Fatal(err)
	}
	r := newRemote(c.(*net.UnixConn))
	conn, err := r.dial(context.Background(), "tcp", backend.String())
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(conn)
	if string(got) != "hello" {
		t.Fatalf("through the relayed socket: %q", got)
	}
	if _, err := r.dial(context.Background(), "tcp", "127.0.0.1:1"); err == nil {
		t.Fatal("a failed dial on the host succeeded")
	}
	r.report(Denial{Host: "x.test", Proto: "dns", Reason: reasonNotAllowed})
	if d := <-denied; d.Host != "x.test" {
		t.Fatalf("denial: %+v", d)
	}
}
