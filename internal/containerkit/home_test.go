package containerkit

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
)

// fsArchiver is a created container holding dirs (path → header), which
// counts the probes and archives it is sent; probeErr fails every probe.
type fsArchiver struct {
	dirs          map[string]*tar.Header
	probeErr      error
	probes, puts  int
	extractedDirs []string
	// gate, when set, holds each probe until it is closed.
	gate chan struct{}
	mu   sync.Mutex
}

func (a *fsArchiver) Stat(context.Context, string) (bool, bool, error) { return true, true, nil }
func (a *fsArchiver) GetArchive(context.Context, string) (io.ReadCloser, error) {
	return nil, errors.New("not used")
}
func (a *fsArchiver) Headers(_ context.Context, paths []string) ([]*tar.Header, error) {
	a.mu.Lock()
	a.probes++
	a.mu.Unlock()
	if a.gate != nil {
		<-a.gate
	}
	var hdrs []*tar.Header
	for _, p := range paths {
		hdrs = append(hdrs, a.dirs[p])
	}
	return hdrs, a.probeErr
}
func (a *fsArchiver) PutArchive(_ context.Context, dir string, r io.Reader) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.puts++
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		a.extractedDirs = append(a.extractedDirs, h.Name)
	}
}

func dir(uid, gid int, mode int64) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeDir, Uid: uid, Gid: gid, Mode: mode}
}

// The home is prepared unless every owned directory is a directory of the
// run's user it can write, under parents everyone can search; each fact
// is probed once per image id, user and directory set, then kept in the
// process and in the user's cache directory, where a corrupt entry is a
// miss. Without an image id nothing is probed. A failed probe prepares
// the home and remembers nothing.
func TestPrepareHomeSkipsWhatTheImageHas(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	ctx := context.Background()
	fitting := func() map[string]*tar.Header {
		return map[string]*tar.Header{"/home": dir(0, 0, 0o755), HomeDir: dir(7, 8, 0o700), HomeDir + "/.cfg": dir(7, 8, 0o755)}
	}
	spec := func(image string, binds ...Bind) Spec {
		return Spec{ImageID: image, UID: 7, GID: 8, Binds: append([]Bind{{Source: "/wt", Target: WorkspaceDir}}, binds...), hasWorktree: true}
	}
	cfgBind := Bind{Source: "/s", Target: HomeDir + "/.cfg/sub"}
	for _, c := range []struct {
		name   string
		spec   Spec
		change func(map[string]*tar.Header)
		probes int
		puts   int
	}{
		{"fits", spec("sha256:a"), nil, 1, 0},
		{"fits with a bind's parent", spec("sha256:a", cfgBind), nil, 1, 0},
		{"unknown image", spec(""), nil, 0, 1},
		{"home of root", spec("sha256:b"), func(m map[string]*tar.Header) { m[HomeDir] = dir(0, 0, 0o1777) }, 1, 1},
		{"home of another group", spec("sha256:c"), func(m map[string]*tar.Header) { m[HomeDir] = dir(7, 9, 0o755) }, 1, 1},
		{"home read-only", spec("sha256:d"), func(m map[string]*tar.Header) { m[HomeDir] = dir(7, 8, 0o555) }, 1, 1},
		{"home missing", spec("sha256:e"), func(m map[string]*tar.Header) { delete(m, HomeDir) }, 1, 1},
		{"home a symlink", spec("sha256:f"), func(m map[string]*tar.Header) {
			m[HomeDir] = &tar.Header{Typeflag: tar.TypeSymlink, Uid: 7, Gid: 8, Mode: 0o777}
		}, 1, 1},
		{"parent not searchable", spec("sha256:g"), func(m map[string]*tar.Header) { m["/home"] = dir(0, 0, 0o750) }, 1, 1},
		{"bind's parent missing", spec("sha256:h", Bind{Source: "/s", Target: HomeDir + "/.none/sub"}), nil, 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := &fsArchiver{dirs: fitting()}
			if c.change != nil {
				c.change(a.dirs)
			}
			h := NewHomes("acme")
			for i, probes := range []int{c.probes, 0} { // the second create is a hit
				a.probes = 0
				if err := c.spec.PrepareHome(ctx, a, h); err != nil {
					t.Fatal(err)
				}
				if a.probes != probes {
					t.Errorf("create %d: %d probes, want %d", i, a.probes, probes)
				}
			}
			if a.puts != 2*c.puts {
				t.Errorf("%d archives for two creates, want %d", a.puts, 2*c.puts)
			}
			a.probes = 0 // another process, the same cache directory
			if err := c.spec.PrepareHome(ctx, a, NewHomes("acme")); err != nil || a.probes != 0 || a.puts != 3*c.puts {
				t.Errorf("from the cache directory: %v, %d probes, %d archives", err, a.probes, a.puts)
			}
		})
	}

	a := &fsArchiver{dirs: fitting()}
	if err := spec("sha256:a").PrepareHome(ctx, a, NewHomes("other")); err != nil || a.probes != 1 || a.puts != 0 {
		t.Errorf("another engine's fact was used: %v, %d probes, %d archives", err, a.probes, a.puts)
	}

	entries, err := os.ReadDir(filepath.Join(cache, "sanddune", "home"))
	if err != nil || len(entries) != 10 {
		t.Fatalf("cache entries: %d %v", len(entries), err)
	}
	for _, e := range entries {
		if err := os.WriteFile(filepath.Join(cache, "sanddune", "home", e.Name()), []byte("fits"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a = &fsArchiver{dirs: fitting()}
	a.dirs[HomeDir] = dir(0, 0, 0o755)
	if err := spec("sha256:a").PrepareHome(ctx, a, NewHomes("acme")); err != nil || a.probes != 1 || a.puts != 1 {
		t.Errorf("corrupt cache entry: %v, %d probes, %d archives", err, a.probes, a.puts)
	}

	a = &fsArchiver{dirs: fitting(), probeErr: errors.New("daemon gone")}
	h := NewHomes("acme")
	for range 2 {
		if err := spec("sha256:new").PrepareHome(ctx, a, h); err != nil {
			t.Fatal(err)
		}
	}
	if a.probes != 2 || a.puts != 2 {
		t.Errorf("failed probes: %d probes, %d archives, want 2 and 2", a.probes, a.puts)
	}
	if want := []string{"home/", "home/agent/"}; len(a.extractedDirs) < 2 || a.extractedDirs[0] != want[0] || a.extractedDirs[1] != want[1] {
		t.Errorf("archive %q", a.extractedDirs)
	}
}

// Creates asking at the same time for a fact not known yet wait for one
// probe.
func TestPrepareHomeProbesOnceForConcurrentCreates(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		a := &fsArchiver{gate: make(chan struct{}), dirs: map[string]*tar.Header{"/home": dir(0, 0, 0o755), HomeDir: dir(7, 8, 0o700)}}
		h := newHomes("acme", "")
		s := Spec{ImageID: "sha256:a", UID: 7, GID: 8, Binds: []Bind{{Source: "/wt", Target: WorkspaceDir}}, hasWorktree: true}
		errs := make(chan error, 5)
		for range 5 {
			go func() { errs <- s.PrepareHome(context.Background(), a, h) }()
		}
		synctest.Wait() // every create is probing or waiting
		if a.probes != 1 {
			t.Errorf("five creates at once: %d probes, want 1", a.probes)
		}
		close(a.gate)
		for range 5 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if a.puts != 0 {
			t.Errorf("%d archives for an image that has the home", a.puts)
		}
	})
}

// Homes remembers the id preflight found per image name; the container is
// made from it.
func TestHomesImageID(t *testing.T) {
	t.Parallel()
	h := NewHomes("acme")
	s := Spec{Image: "sanddune:r"}
	if s.ImageID = h.ImageID(s.Image); s.From() != "sanddune:r" {
		t.Fatalf("from %q before preflight", s.From())
	}
	h.Inspected("sanddune:r", "sha256:1")
	h.Inspected("sanddune:r", "sha256:2")
	if s.ImageID = h.ImageID(s.Image); s.From() != "sha256:2" || h.ImageID("other") != "" {
		t.Fatalf("from %q after preflight", s.From())
	}
}
