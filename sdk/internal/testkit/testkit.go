// Package testkit holds what the conformance kits share.
package testkit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/plugintest"
)

// Config completes v the way the host's decoder does: attributes and blocks
// of the schema that v (an object, or cty.NilVal for an empty block) lacks
// get their default (or null), single blocks null, list blocks empty.
func Config(v cty.Value, s sdk.Schema) sdk.Config {
	if v != cty.NilVal && (!v.Type().IsObjectType() || !v.IsKnown() || v.IsNull()) {
		return sdk.Config{Value: v}
	}
	return sdk.Config{Value: complete(v, s)}
}

func complete(v cty.Value, s sdk.Schema) cty.Value {
	vals := map[string]cty.Value{}
	if v != cty.NilVal {
		vals = v.AsValueMap()
		if vals == nil {
			vals = map[string]cty.Value{}
		}
	}
	for _, a := range s.Attributes {
		if _, ok := vals[a.Name]; ok {
			continue
		}
		if a.Default != cty.NilVal {
			vals[a.Name] = a.Default
		} else {
			vals[a.Name] = cty.NullVal(a.Type)
		}
	}
	for _, b := range s.Blocks {
		if _, ok := vals[b.TypeName]; ok {
			continue
		}
		ty := complete(cty.NilVal, b.Body).Type()
		if b.Nesting == sdk.NestingList {
			vals[b.TypeName] = cty.ListValEmpty(ty)
		} else {
			vals[b.TypeName] = cty.NullVal(ty)
		}
	}
	return cty.ObjectVal(vals)
}

// CheckInfo reports what is wrong with a component's Info as the host sees
// it (Serve fills its name, kind and protocol versions).
func CheckInfo(info sdk.Info) []string {
	if info.Version == "" {
		return []string{"Info.Version is empty"}
	}
	return nil
}

// WaitGone waits until the process pid no longer runs, and fails the test
// (killing it) when it still does after 10s. A zombie counts as gone: it
// waits for a reaper that may not exist in a container.
func WaitGone(t plugintest.T, pid int) {
	t.Helper()
	for range 200 {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) > 0 && f[0] == "Z" {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("process %d still running", pid)
}

// WriteFile writes a file with exactly mode, creating its parents.
func WriteFile(t plugintest.T, path, content string, mode os.FileMode) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(path), 0o755))
	must(t, os.WriteFile(path, []byte(content), mode))
	must(t, os.Chmod(path, mode))
}

// CheckFile checks that path is a regular file (not a symlink) with
// content and mode.
func CheckFile(t plugintest.T, path, content string, mode os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Errorf("%v", err)
		return
	}
	data, _ := os.ReadFile(path)
	if !fi.Mode().IsRegular() || string(data) != content || fi.Mode().Perm() != mode {
		t.Errorf("%s: mode %v content %q, want regular %v %q", path, fi.Mode(), data, mode, content)
	}
}

func must(t plugintest.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%v", err)
	}
}

func formatEvent(e sdk.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{%s", e.Type)
	for _, f := range []struct{ k, v string }{{"text", e.Text}, {"tool", e.ToolName}, {"arg", e.ToolArg}, {"session", e.SessionID}} {
		if f.v != "" {
			fmt.Fprintf(&b, " %s=%q", f.k, f.v)
		}
	}
	if e.Usage != nil {
		fmt.Fprintf(&b, " usage=%+v", *e.Usage)
	}
	return b.String() + "}"
}

// DiffEvents describes how got differs from want, or returns "".
func DiffEvents(got, want []sdk.Event) string {
	var b strings.Builder
	for i := 0; i < max(len(got), len(want)); i++ {
		switch {
		case i >= len(got):
			fmt.Fprintf(&b, "  #%d missing: want %s\n", i, formatEvent(want[i]))
		case i >= len(want):
			fmt.Fprintf(&b, "  #%d extra:   got  %s\n", i, formatEvent(got[i]))
		case !reflect.DeepEqual(got[i], want[i]):
			fmt.Fprintf(&b, "  #%d got  %s\n     want %s\n", i, formatEvent(got[i]), formatEvent(want[i]))
		}
	}
	return b.String()
}
