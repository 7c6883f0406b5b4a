package main

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// prepare makes the release commit's module files for version: the root
// and examples/ require the SDK at version, their go.sum carry the hashes
// of the checkout's SDK as sdk/version will publish it, and go.work
// points that version at ./sdk.
func prepare(root string, args []string) error {
	if len(args) != 1 || !semver.IsValid(args[0]) || module.Check(sdkPath, args[0]) != nil {
		return fmt.Errorf("usage: go run ./scripts/release prepare vX.Y.Z")
	}
	version := args[0]
	scratch, err := os.MkdirTemp("", "sanddune-prepare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	sum, err := publishSDK(root, scratch, version)
	if err != nil {
		return err
	}
	for _, m := range []string{".", "examples"} {
		gomod, gosum, err := releaseFiles(filepath.Join(root, m, "go.mod"), filepath.Join(root, m, "go.sum"), version, sum)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, m, "go.mod"), gomod, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, m, "go.sum"), gosum, 0o644); err != nil {
			return err
		}
	}
	path := filepath.Join(root, "go.work")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	w, err := modfile.ParseWork(path, data, nil)
	if err != nil {
		return err
	}
	for _, r := range w.Replace {
		if r.Old.Path == sdkPath {
			if err := w.DropReplace(r.Old.Path, r.Old.Version); err != nil {
				return err
			}
		}
	}
	if err := w.AddReplace(sdkPath, version, "./sdk", ""); err != nil {
		return err
	}
	w.Cleanup()
	if err := os.WriteFile(path, modfile.Format(w.Syntax), 0o644); err != nil {
		return err
	}
	fmt.Printf("release prepare: go.mod, go.sum (root, examples) and go.work require %s@%s; commit, then tag %s and sdk/%s on that commit\n", sdkPath, version, version, version)
	return nil
}
