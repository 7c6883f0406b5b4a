package containerkittest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/internal/egress"
	"github.com/missingstudio/sanddune/internal/egress/egresstest"
	"github.com/missingstudio/sanddune/internal/kittest"
	"github.com/missingstudio/sanddune/sdk"
)

// Egress checks what the conformance kit's egress test leaves to the
// engines, against listeners on this host: root in the container cannot
// reach an unlisted address either, not even with the enforcer's firewall
// mark on its socket; an HTTP request is decided by its Host, so a listed
// name's address does not carry a request for another; UDP out is
// refused; WatchEgress reports each refusal; and Close, or gc removing
// what ListResources lists, leaves no container of the run (the sidecar)
// behind. Run it under egresstest.WithEnforcer.
func Egress(t *testing.T, e Engine) {
	e.start(t)
	port, namedPort := kittest.HelloListener(t, "0.0.0.0"), kittest.HelloListener(t, "0.0.0.0")
	connect := func(host string, port int, send string) sdk.ExecRequest {
		return sdk.ExecRequest{Argv: []string{"bash", "-c", fmt.Sprintf(`exec 3<>/dev/tcp/%s/%d && printf "$0" >&3 && head -n1 <&3`, host, port), send}, Timeout: 30 * time.Second}
	}
	reaches := func(sb sdk.Sandbox, req sdk.ExecRequest) bool {
		res, o := kittest.Exec(t, sb, req)
		return res.ExitCode == 0 && slices.Equal(o.Stdout, []string{"hello"})
	}

	open, _ := Create(t, e, e.Config(t, nil), nil)
	gw := gateway(t, open)
	unlisted := kittest.OtherIPv4(t, gw)
	if !reaches(open, connect(unlisted, port, "")) {
		t.Fatalf("without a policy the sandbox cannot reach %s:%d (test is void)", unlisted, port)
	}

	policy := sdk.EgressPolicy{Allow: []string{fmt.Sprintf("ok.test:%d", namedPort)}, Hosts: map[string]string{"ok.test": gw}}
	sb, req := Create(t, e, e.Config(t, nil), func(r *sdk.CreateRequest) { r.Egress = &policy })
	watch := egresstest.Watch(t, sb)

	asRoot := connect(unlisted, port, "")
	asRoot.Sudo = true // root in the container, but without CAP_NET_ADMIN
	if reaches(sb, asRoot) {
		t.Errorf("root in the sandbox reaches the unlisted %s:%d", unlisted, port)
	}
	marked := sdk.ExecRequest{Sudo: true, Timeout: 30 * time.Second, Argv: []string{"perl", "-MSocket", "-e", fmt.Sprintf(
		`socket(S, PF_INET, SOCK_STREAM, 0) or die; setsockopt(S, SOL_SOCKET, 36, pack("i", %d)) or die "SO_MARK: $!\n"; `+
			`connect(S, pack_sockaddr_in(%d, inet_aton("%s"))) or die "connect: $!\n"; print scalar <S>`, egress.Mark, port, unlisted)}}
	if reaches(sb, marked) {
		t.Errorf("root in the sandbox reaches the unlisted %s:%d with the enforcer's firewall mark (SO_MARK) on its socket", unlisted, port)
	}
	if !reaches(sb, connect("ok.test", namedPort, `GET / HTTP/1.1\r\nHost: ok.test\r\n\r\n`)) {
		t.Errorf("an HTTP request for the listed ok.test:%d does not get through", namedPort)
	}
	if reaches(sb, connect("ok.test", namedPort, `GET / HTTP/1.1\r\nHost: unlisted.test\r\n\r\n`)) {
		t.Errorf("an HTTP request for unlisted.test got through to ok.test's address")
	}
	kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"bash", "-c", fmt.Sprintf(`echo data > /dev/udp/%s/%d`, unlisted, port)}})

	want := []sdk.EgressDenial{
		{Host: unlisted, Port: port, Proto: "tcp"},
		{Host: "unlisted.test", Port: namedPort, Proto: "tcp"},
		{Host: unlisted, Port: port, Proto: "udp"},
	}
	watch.Expect(t, want...)
	watch.Stop(t)

	if err := sb.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if left := e.Containers(t, req.RunID); len(left) != 0 {
		t.Fatalf("containers of the run left after Close (the egress sidecar?): %v", left)
	}

	// gc removes what ListResources lists of a run, the sandbox first.
	sb, req = Create(t, e, e.Config(t, nil), func(r *sdk.CreateRequest) { r.Egress = &policy })
	p := e.New().(sdk.ResourceLister)
	rs, err := p.ListResources(context.Background(), sdk.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{sb.Info().ID}
	for _, r := range rs {
		if r.Labels[sdk.LabelRun] == req.RunID && r.ID != sb.Info().ID {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) != 2 {
		t.Fatalf("ListResources lists %d resources of the run, want the sandbox and its sidecar: %+v", len(ids), rs)
	}
	for _, id := range ids {
		if err := p.RemoveResource(context.Background(), sdk.Config{}, id); err != nil {
			t.Fatalf("RemoveResource %s: %v", id, err)
		}
	}
	if left := e.Containers(t, req.RunID); len(left) != 0 {
		t.Fatalf("containers of the run left after gc: %v", left)
	}
}
