package enginetest

import (
	"context"
	"os"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/plugins/bubblewrap"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/plugintest"

)

func TestZZBw2(t *testing.T) {
	ctx := context.Background()
	bad := 0
	wt := t.TempDir()
	sb, err := plugintest.Sandbox(t, bubblewrap.New()).Create(ctx, sdk.CreateRequest{Config: sdk.Config{Value: cty.EmptyObjectVal}, RunID: "x", HostRepoPath: wt, WorktreePath: wt, HostUID: os.Getuid(), HostGID: os.Getgid(), Labels: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	seen := map[string]bool{}
	gone := 0
	for i := 0; i < 3000; i++ {
		var tasks []string
		now := map[string]bool{}
		for _, tk := range tasks {
			now[tk] = true
		}
		for tk := range seen {
			if !now[tk] {
				gone++
				delete(seen, tk)
			}
		}
		for tk := range now {
			seen[tk] = true
		}
		res, err := sb.Exec(ctx, sdk.ExecRequest{Argv: []string{"sh", "-c", "true"}, Stdin: []byte(os.Getenv("ZZ_STDIN"))}, func(sdk.OutputLine) {})
		if err != nil || res.ExitCode != 0 {
			bad++
			t.Logf("exec %d: %v %+v", i, err, res)
		}
	}
	t.Log("bad", bad, "threads gone", gone, "threads", len(seen))
}
