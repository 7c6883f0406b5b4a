package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
)

// modules are the repository's modules, as go.work lists them.
var modules = []string{".", "sdk", "examples", "scripts/release"}

// tidy checks that `go mod tidy` leaves every module's go.mod and go.sum
// as they are, resolved as a dependent resolves them (no workspace). An
// SDK version a module requires that is not tagged yet is served from the
// checkout, and its go.sum lines are left out of the comparison: they are
// known only once the release commit fixes the SDK (prepare writes them).
// With -w it writes what tidy wants instead.
func tidy(root string, args []string) error {
	fs := flag.NewFlagSet("tidy", flag.ExitOnError)
	write := fs.Bool("w", false, "write the tidy go.mod and go.sum")
	fs.Parse(args)
	scratch, err := os.MkdirTemp("", "sanddune-tidy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	proxy := filepath.Join(scratch, "proxy")
	env, err := goEnv(scratch, proxy)
	if err != nil {
		return err
	}
	var untidy []string
	for i, m := range modules {
		v, err := sdkRequirement(filepath.Join(root, m, "go.mod"))
		if err != nil {
			return err
		}
		unpublished := v != "" && !tagged(root, "sdk/"+v)
		if unpublished {
			if _, err := publishSDK(root, proxy, v); err != nil {
				return err
			}
		}
		strip := func(b []byte) []byte {
			if unpublished {
				return withoutSDK(b)
			}
			return b
		}
		tmp := filepath.Join(scratch, fmt.Sprint(i))
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			return err
		}
		was := map[string][]byte{}
		for _, f := range []string{"go.mod", "go.sum"} {
			data, err := os.ReadFile(filepath.Join(root, m, f))
			if err != nil && !os.IsNotExist(err) {
				return err
			}
			was[f] = strip(data)
			if err := os.WriteFile(filepath.Join(tmp, f), was[f], 0o644); err != nil {
				return err
			}
		}
		if _, err := run(filepath.Join(root, m), env, "go", "mod", "tidy", "-modfile="+filepath.Join(tmp, "go.mod")); err != nil {
			return err
		}
		for _, f := range []string{"go.mod", "go.sum"} {
			data, err := os.ReadFile(filepath.Join(tmp, f))
			if err != nil {
				return err
			}
			if now := strip(data); !bytes.Equal(now, was[f]) {
				path := filepath.Join(m, f)
				if *write {
					fmt.Println("release tidy: wrote", path)
					if err := os.WriteFile(filepath.Join(root, path), now, 0o644); err != nil {
						return err
					}
					continue
				}
				a, b := filepath.Join(tmp, f+".committed"), filepath.Join(tmp, f+".tidy")
				if err := errors.Join(os.WriteFile(a, was[f], 0o644), os.WriteFile(b, now, 0o644)); err != nil {
					return err
				}
				diff, _ := exec.Command("diff", "-u", "--label", path, "--label", path+" (tidy)", a, b).Output()
				fmt.Printf("%s is not tidy:\n%s", path, diff)
				untidy = append(untidy, path)
			}
		}
	}
	if len(untidy) > 0 {
		return fmt.Errorf("not tidy: %s (go run ./scripts/release tidy -w fixes them)", strings.Join(untidy, ", "))
	}
	fmt.Println("release tidy: every go.mod and go.sum is tidy")
	return nil
}

// sdkRequirement is the SDK version the go.mod at path requires ("" for none).
func sdkRequirement(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	f, err := modfile.ParseLax(path, data, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Require {
		if r.Mod.Path == sdkPath {
			return r.Mod.Version, nil
		}
	}
	return "", nil
}

// tagged reports whether the repository has the tag.
func tagged(root, tag string) bool {
	_, err := gitOut(root, "rev-parse", "-q", "--verify", "refs/tags/"+tag)
	return err == nil
}
