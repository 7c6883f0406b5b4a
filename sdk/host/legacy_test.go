package host

import (
	"context"
	"net"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
	"github.com/missingstudio/sanddune/sdk/internal/pluginpb"
)

// oldAgent is an agent plugin built before the EncodeCwd RPC: its
// description names its cwd encoding.
type oldAgent struct {
	pluginpb.UnimplementedAgentServer
	encoding string
}

func (a oldAgent) Describe(context.Context, *pluginpb.ConfigRequest) (*pluginpb.AgentDescription, error) {
	//lint:ignore SA1019 an old plugin sets the deprecated field: what the host must still read
	return &pluginpb.AgentDescription{Sessions: &pluginpb.SessionStorage{PathPattern: "{home}/{cwd_encoded}/{session_id}", EncodeCwd: a.encoding}}, nil
}

// TestEncodeCwdOfAPluginBeforeTheRPC: a plugin that names "claude" or "pi"
// in its description, and has no EncodeCwd, gets that CLI's encoding.
func TestEncodeCwdOfAPluginBeforeTheRPC(t *testing.T) {
	const cwd = "/home/agent/my repo.v1"
	for encoding, want := range map[string]string{"claude": agentkit.EncodeClaudeCwd(cwd), "pi": agentkit.EncodePiCwd(cwd), "": ""} {
		sock := filepath.Join(t.TempDir(), "s")
		l, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		pluginpb.RegisterAgentServer(srv, oldAgent{encoding: encoding})
		go func() { _ = srv.Serve(l) }()
		t.Cleanup(srv.Stop)
		cc, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cc.Close() })
		a := &agentProviderClient{providerClient: providerClient{conn: connect(context.Background(), cc, &asked{}).(*conn), ref: &pluginpb.ComponentRef{Name: "old"}}}
		if _, err := a.Describe(context.Background(), sdk.Config{}); err != nil {
			t.Fatal(err)
		}
		got, err := a.EncodeCwd(context.Background(), cwd)
		if want == "" {
			if err == nil {
				t.Errorf("EncodeCwd of a plugin with neither the RPC nor an encoding = %q, want an error", got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("EncodeCwd with encode_cwd %q = %q, %v; want %q", encoding, got, err, want)
		}
	}
}
