package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/missingstudio/sanddune/sdk"
)

// Listing is one row of `sanddune plugins list`.
type Listing struct {
	Info   sdk.Info
	Source Source
	// SHA256 is the binary's checksum; "" for a built-in.
	SHA256 string
	// Lock is the lock file with an entry for the plugin; "" when none has.
	Lock string
	// Mismatch is set when the binary does not match that entry.
	Mismatch bool
	// Ignored is set for a binary a built-in of the same name wins over.
	Ignored bool
	Err     error
}

// Sources are the plugins this host would use: the built-ins, the
// binaries on the search path (those named like a built-in are Ignored)
// and the binaries required_plugins names, sorted by name.
func (h *Host) Sources() (srcs []Source, ignored []Source) {
	seen := map[string]bool{}
	for name := range h.opts.Required {
		if src, ok := h.source(name); ok && !src.Builtin() {
			srcs = append(srcs, src)
			seen[name] = true
		}
	}
	for _, s := range listBinaries(h.dirs) {
		if seen[s.Name] {
			continue
		}
		if h.isBuiltin(s.Name) {
			if !h.besideSanddune(s.Path) {
				ignored = append(ignored, s)
			}
			continue
		}
		if h.isBuiltinBinary(s.Path) {
			continue // a binary of built-ins serves them under their names
		}
		s.Trusted = h.trustedDir(filepath.Dir(s.Path))
		seen[s.Name] = true
		srcs = append(srcs, s)
	}
	for b := range h.opts.Builtins {
		if !seen[b] {
			srcs = append(srcs, Source{Name: b})
		}
	}
	sort.Slice(srcs, func(i, j int) bool { return srcs[i].Name < srcs[j].Name })
	return srcs, ignored
}

// List starts every plugin this host would use and returns what each
// serves. A binary the user has not trusted is not started: it is listed
// with an UntrustedError, like a plugin that fails to start.
func (h *Host) List(ctx context.Context) []Listing {
	srcs, ignored := h.Sources()
	rows := make([][]Listing, len(srcs))
	var wg sync.WaitGroup
	for i, s := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rows[i] = h.list(ctx, s)
		}()
	}
	wg.Wait()
	var out []Listing
	for _, r := range rows {
		out = append(out, r...)
	}
	for _, s := range ignored {
		sum, _ := FileSHA256(s.Path)
		l := Listing{Source: s, SHA256: sum, Ignored: true}
		l.Lock, l.Mismatch = h.lockState(s.Name, sum)
		out = append(out, l)
	}
	return out
}

func (h *Host) list(ctx context.Context, s Source) []Listing {
	base := Listing{Source: s}
	if !s.Builtin() {
		sum, err := FileSHA256(s.Path)
		if err != nil {
			base.Err = err
			return []Listing{base}
		}
		base.SHA256 = sum
		base.Lock, base.Mismatch = h.lockState(s.Name, sum)
	}
	if err := h.checkBuiltin(s); err != nil {
		base.Err = err
		return []Listing{base}
	}
	p := h.start(ctx, s)
	if p.err != nil {
		base.Err = p.err
		return []Listing{base}
	}
	var out []Listing
	for _, info := range p.catalog {
		if s.Builtin() && info.Name != s.Name {
			continue // a built-in's binary serves others too: each is listed on its own
		}
		l := base
		l.Info = info
		out = append(out, l)
	}
	return out
}

// lockState is the lock file with an entry for a plugin ("" for none), and
// whether the entry pins another checksum than sum.
func (h *Host) lockState(name, sum string) (string, bool) {
	if e, l, ok := h.lockFor(name); ok {
		return l.Path, e.SHA256 != sum
	}
	return "", false
}

// LockRepo trusts and pins every plugin binary this host would use in the
// repository: it records the binaries that come with the repository or the
// config as trusted by the user, starts every binary to learn its version,
// and writes the repository's lock file. Built-ins are not locked: they are
// part of sanddune. It returns the entries written.
func (h *Host) LockRepo(ctx context.Context) ([]LockEntry, error) {
	if h.opts.RepoRoot == "" {
		return nil, errors.New("not in a git repository: `sanddune plugins lock` pins the plugins of a repository")
	}
	srcs, _ := h.Sources()
	lock := &Lock{Path: h.RepoLockFile(), Entries: map[string]LockEntry{}}
	for _, s := range srcs {
		if s.Builtin() {
			continue
		}
		sum, err := FileSHA256(s.Path)
		if err != nil {
			return nil, fmt.Errorf("plugin %q: %w", s.Name, err)
		}
		if !s.Trusted {
			if err := h.trust.Trust(sum, s.Path); err != nil {
				return nil, fmt.Errorf("recording plugin %q as trusted: %w", s.Name, err)
			}
		}
		lock.Entries[s.Name] = LockEntry{Name: s.Name, Source: h.displayPath(s.Path), SHA256: sum}
	}
	// The new lock replaces the old one for the starts below (which go
	// through SecureConfig like any other start).
	h.locks, h.lockErr = []*Lock{lock}, nil
	var errs []error
	for _, l := range h.List(ctx) {
		if l.Source.Builtin() || l.Ignored {
			continue
		}
		if l.Err != nil {
			errs = append(errs, l.Err)
			continue
		}
		e := lock.Entries[l.Source.Name]
		if e.Version == "" || e.Version == l.Info.Version {
			e.Version = l.Info.Version
		} else {
			e.Version = "" // components of different versions: none is the binary's
		}
		lock.Entries[l.Source.Name] = e
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("nothing locked: %w", errors.Join(errs...))
	}
	if err := lock.Write(); err != nil {
		return nil, fmt.Errorf("writing %s: %w", lock.Path, err)
	}
	out := make([]LockEntry, 0, len(lock.Entries))
	for _, e := range lock.Entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// displayPath is a binary's path relative to the repository root when it
// lies inside it (so the lock file means the same in every clone).
func (h *Host) displayPath(p string) string {
	if h.opts.RepoRoot != "" {
		if rel, err := filepath.Rel(h.opts.RepoRoot, p); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return p
}

// Install starts a plugin binary to check it is a sanddune plugin and
// learn its version, copies it into the user plugin dir as
// sanddune-plugin-<name> (name "" takes it from the file name), and pins
// it in the user lock file. A name a built-in has is refused: the built-in would
// win.
func (h *Host) Install(ctx context.Context, path, name string) (LockEntry, error) {
	if name == "" {
		var ok bool
		if name, ok = strings.CutPrefix(filepath.Base(path), BinaryPrefix); !ok || name == "" {
			return LockEntry{}, fmt.Errorf("%s is not named %s<name>: pass --name", path, BinaryPrefix)
		}
	}
	if h.isBuiltin(name) {
		return LockEntry{}, fmt.Errorf("%q is a built-in plugin, and a binary never replaces a built-in by its name alone: "+
			"ask for the binary by source in the config instead: required_plugins { %s = { source = \"%s\" } }", name, name, path)
	}
	if h.UserPluginDir() == "" {
		return LockEntry{}, errors.New("no user plugin dir: set XDG_DATA_HOME or HOME")
	}
	user, err := ReadLock(h.UserLockFile())
	if err != nil {
		return LockEntry{}, err
	}
	sum, err := FileSHA256(path)
	if err != nil {
		return LockEntry{}, err
	}
	dst := filepath.Join(h.UserPluginDir(), BinaryPrefix+name)
	entry := LockEntry{Name: name, Source: dst, SHA256: sum}
	user.Entries[name] = entry
	h.locks, h.lockErr = []*Lock{user}, nil
	p := h.start(ctx, Source{Name: name, Path: path, Trusted: true})
	if p.err != nil {
		return LockEntry{}, fmt.Errorf("%s is not a working sanddune plugin (nothing installed): %w", path, p.err)
	}
	if len(p.catalog) > 0 {
		entry.Version = p.catalog[0].Version
	}
	if err := copyExecutable(path, dst); err != nil {
		return LockEntry{}, fmt.Errorf("installing %s: %w", path, err)
	}
	if got, err := FileSHA256(dst); err != nil || got != sum {
		os.Remove(dst)
		return LockEntry{}, fmt.Errorf("installing %s: the copy in %s does not match the original (SHA-256 %s, want %s): %v", path, dst, got, sum, err)
	}
	user.Entries[name] = entry
	if err := user.Write(); err != nil {
		return LockEntry{}, fmt.Errorf("writing %s: %w", user.Path, err)
	}
	return entry, nil
}

// copyExecutable copies src to dst (mode 0755) through a temp file and a
// rename, so a running copy of dst is never overwritten in place.
func copyExecutable(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return writeAtomic(dst, in, 0o755)
}
