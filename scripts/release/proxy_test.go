package main

import (
	"archive/zip"
	"encoding/json"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"
)

// TestPublish lays out a repository like this one and checks the file
// proxy publish writes: the modules' zips hold what a commit of the
// working tree would (no nested module, no ignored file), and the root's
// go.mod and go.sum are the release commit's.
func TestPublish(t *testing.T) {
	repo := t.TempDir()
	for name, content := range map[string]string{
		".gitignore":         "/bin/\n",
		"go.mod":             "module " + rootPath + "\n\ngo 1.26.0\n\nrequire " + sdkPath + " v0.1.0\n",
		"go.sum":             "example.com/dep v1.0.0 h1:x=\n",
		"core/core.go":       "package core\n",
		"bin/sanddune":       "an ignored build output\n",
		"sdk/go.mod":         "module " + sdkPath + "\n\ngo 1.26.0\n",
		"sdk/sdk.go":         "package sdk\n",
		"examples/go.mod":    "module " + rootPath + "/examples\n",
		"examples/plugin.go": "package main\n",
		"untracked.go":       "package sanddune\n",
	} {
		writeTestFile(t, filepath.Join(repo, name), content)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "go.mod", "go.sum", "core", "sdk", "examples", ".gitignore"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	proxy := t.TempDir()
	const v = "v0.99.0-test"
	sum, err := publish(repo, proxy, v)
	if err != nil {
		t.Fatal(err)
	}
	rootDir := filepath.Join(proxy, "github.com/missingstudio/sanddune/@v")
	sdkDir := filepath.Join(proxy, "github.com/missingstudio/sanddune/sdk/@v")

	sdkZip, rootZip := zipContents(t, filepath.Join(sdkDir, v+".zip")), zipContents(t, filepath.Join(rootDir, v+".zip"))
	if got, want := slices.Sorted(maps.Keys(sdkZip)), []string{"go.mod", "sdk.go"}; !slices.Equal(got, want) {
		t.Errorf("SDK zip holds %v, want %v", got, want)
	}
	if got, want := slices.Sorted(maps.Keys(rootZip)), []string{".gitignore", "core/core.go", "go.mod", "go.sum", "untracked.go"}; !slices.Equal(got, want) {
		t.Errorf("root zip holds %v, want %v (no nested module, no ignored file)", got, want)
	}
	h1, err := dirhash.HashZip(filepath.Join(sdkDir, v+".zip"), dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	if sum[0] != sdkPath+" "+v+" "+h1 || !strings.HasPrefix(sum[1], sdkPath+" "+v+"/go.mod h1:") {
		t.Errorf("SDK go.sum lines %q, want its zip's hash %s", sum, h1)
	}
	gomod := rootZip["go.mod"]
	if !strings.Contains(gomod, "require "+sdkPath+" "+v+"\n") {
		t.Errorf("root go.mod in the zip does not require the SDK at %s:\n%s", v, gomod)
	}
	if mod, _ := os.ReadFile(filepath.Join(rootDir, v+".mod")); string(mod) != gomod {
		t.Errorf("root .mod differs from the zip's go.mod:\n%s", mod)
	}
	if gosum, want := rootZip["go.sum"], "example.com/dep v1.0.0 h1:x=\n"+sum[0]+"\n"+sum[1]+"\n"; gosum != want {
		t.Errorf("root go.sum in the zip:\n%s\nwant:\n%s", gosum, want)
	}
	var info struct{ Version string }
	if data, err := os.ReadFile(filepath.Join(rootDir, v+".info")); err != nil || json.Unmarshal(data, &info) != nil || info.Version != v {
		t.Errorf("root .info: %s (%v)", data, err)
	}
	if list, _ := os.ReadFile(filepath.Join(sdkDir, "list")); string(list) != v+"\n" {
		t.Errorf("SDK list: %q", list)
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// zipContents maps a module zip's files, without the module@version/
// prefix, to their contents.
func zipContents(t *testing.T, path string) map[string]string {
	t.Helper()
	z, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	files := map[string]string{}
	for _, f := range z.File {
		_, rest, _ := strings.Cut(f.Name, "@")
		_, rel, _ := strings.Cut(rest, "/")
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		files[rel] = string(data)
	}
	return files
}

// TestWithSum keeps go.sum in the go command's order: by path, then by
// semantic version, a version's go.mod line after its own.
func TestWithSum(t *testing.T) {
	old := "a.example/m v1.1.24 h1:a=\na.example/m v1.1.24/go.mod h1:b=\nz.example/m v1.0.0/go.mod h1:c=\n"
	got := string(withSum([]byte(old), []string{"a.example/m v1.1.9/go.mod h1:d=", "m.example/sdk v0.1.0 h1:e=", "m.example/sdk v0.1.0/go.mod h1:f="}))
	want := "a.example/m v1.1.9/go.mod h1:d=\na.example/m v1.1.24 h1:a=\na.example/m v1.1.24/go.mod h1:b=\nm.example/sdk v0.1.0 h1:e=\nm.example/sdk v0.1.0/go.mod h1:f=\nz.example/m v1.0.0/go.mod h1:c=\n"
	if got != want {
		t.Errorf("withSum:\n%s\nwant:\n%s", got, want)
	}
}
