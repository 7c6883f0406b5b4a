package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
)

func cfg(attrs map[string]cty.Value) sdk.Config {
	v := map[string]cty.Value{
		"network":       cty.NullVal(cty.String),
		"allowed_hosts": cty.NullVal(cty.List(cty.String)),
	}
	for k, a := range attrs {
		v[k] = a
	}
	return sdk.Config{Value: cty.ObjectVal(v)}
}

func TestConfigureRefusesNetworkConfig(t *testing.T) {
	ctx := context.Background()
	p := newProvider()
	for name, tc := range map[string]struct {
		config    sdk.Config
		attribute string // "" means no error
	}{
		"unset":          {cfg(nil), ""},
		"none":           {cfg(map[string]cty.Value{"network": cty.StringVal("none")}), ""},
		"bridge refused": {cfg(map[string]cty.Value{"network": cty.StringVal("bridge")}), "network"},
		"allowed_hosts refused": {cfg(map[string]cty.Value{
			"allowed_hosts": cty.ListVal([]cty.Value{cty.StringVal("github.com")}),
		}), "allowed_hosts"},
	} {
		ds, err := p.Configure(ctx, tc.config)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tc.attribute == "" {
			if ds.HasErrors() {
				t.Errorf("%s: unexpected errors %v", name, ds)
			}
			continue
		}
		if !ds.HasErrors() || ds[0].Attribute != tc.attribute {
			t.Errorf("%s: diagnostics %+v, want an error on %q", name, ds, tc.attribute)
		}
	}
}

func TestSandboxDirect(t *testing.T) {
	ctx := context.Background()
	sb, err := newProvider().Create(ctx, sdk.CreateRequest{Env: map[string]string{"GREETING": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	info := sb.Info()
	var lines []string
	out := func(l sdk.OutputLine) { lines = append(lines, string(l.Text)) }

	res, err := sb.Exec(ctx, sdk.ExecRequest{Shell: `echo "$GREETING $HOME"; pwd; exit 4`}, out)
	if err != nil || res.ExitCode != 4 || strings.Join(lines, "|") != "hi "+info.HomePath+"|"+info.RepoPath {
		t.Errorf("exec: %+v %v %q", res, err, lines)
	}
	res, err = sb.Exec(ctx, sdk.ExecRequest{Argv: []string{"sleep", "100"}, Timeout: 100 * time.Millisecond}, out)
	if err != nil || !res.TimedOut {
		t.Errorf("timeout: %+v %v", res, err)
	}
	if _, err := sb.Exec(ctx, sdk.ExecRequest{Argv: []string{"true"}, Cwd: "../.."}, out); err == nil {
		t.Error("cwd escape: no error")
	}

	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "f"), []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := sb.CopyIn(ctx, filepath.Join(host, "f"), "../../f"); err == nil {
		t.Error("CopyIn traversal: no error")
	}
	if err := os.Symlink(host, filepath.Join(info.RepoPath, "link")); err != nil {
		t.Fatal(err)
	}
	if err := sb.CopyIn(ctx, filepath.Join(host, "f"), "link/g"); err == nil {
		t.Error("CopyIn through symlink: no error")
	}
	if err := sb.CopyIn(ctx, filepath.Join(host, "f"), "d/f"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(info.RepoPath, "d", "f")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("copied file: %v %v", fi, err)
	}

	for range 2 {
		if err := sb.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(info.ID); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dir not removed: %v", err)
	}
}
