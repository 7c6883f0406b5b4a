package containerkit

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
)

// Homes remembers what preparing the agent home needs per image, so that
// a run whose image already has the home it needs costs the engine no
// archive request: the image id preflight found for each image name (the
// container is made from that id, so the fact learnt for it holds for the
// container), and, per image id, user and owned-directory set, whether the
// image's directories already fit (homeFits). Image ids name content, so a
// fact never goes stale: it is kept in this process and in the user's
// cache directory (<cache>/sanddune/home), never in a repository. An
// unreadable or corrupt cache entry is a miss.
type Homes struct {
	engine string
	dir    string // "" remembers nothing across processes

	mu     sync.Mutex
	images map[string]string // image name → id
	facts  map[string]*fact  // by factKey
}

// fact is one fact, learnt by the first create that asks.
type fact struct {
	done     chan struct{} // closed once fits and ok are set
	fits, ok bool          // ok false: not learnt (the probe failed)
}

// NewHomes is an engine's Homes (engine keys its facts: image ids of two
// engines' stores are not compared).
func NewHomes(engine string) *Homes {
	dir, err := os.UserCacheDir()
	if err != nil {
		return newHomes(engine, "")
	}
	return newHomes(engine, filepath.Join(dir, "sanddune", "home"))
}

// newHomes is a Homes remembering its facts in dir ("": in none).
func newHomes(engine, dir string) *Homes {
	return &Homes{engine: engine, dir: dir, images: map[string]string{}, facts: map[string]*fact{}}
}

// Inspected records the id preflight found for image.
func (h *Homes) Inspected(image, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.images[image] = id
}

// ImageID is the id preflight last found for image in this process, or "".
func (h *Homes) ImageID(image string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.images[image]
}

// factKey names one fact: the engine, image id, user and directories.
func (h *Homes) factKey(imageID string, uid, gid int, dirs []string) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d:%d\x00%s", h.engine, imageID, uid, gid, strings.Join(dirs, "\x00")))
	return hex.EncodeToString(sum[:])
}

// fact returns the fact under key: from this process, else from the
// cache directory, else probed, once however many creates ask at the same
// time (they wait for it, or for ctx). A fact not learnt (ok false) is
// asked again by the next create.
func (h *Homes) fact(ctx context.Context, key string, probe func() (bool, error)) (fits, ok bool) {
	h.mu.Lock()
	f, asked := h.facts[key]
	if !asked {
		f = &fact{done: make(chan struct{})}
		h.facts[key] = f
	}
	h.mu.Unlock()
	if asked {
		select {
		case <-f.done:
			return f.fits, f.ok
		case <-ctx.Done():
			return false, false
		}
	}
	defer close(f.done)
	if f.fits, f.ok = h.cached(key); !f.ok {
		var err error
		if f.fits, err = probe(); err == nil {
			f.ok = true
			h.store(key, f.fits)
		} else {
			h.mu.Lock()
			delete(h.facts, key)
			h.mu.Unlock()
		}
	}
	return f.fits, f.ok
}

// cached reads the fact under key from the cache directory.
func (h *Homes) cached(key string) (fits, ok bool) {
	if h.dir == "" {
		return false, false
	}
	switch b, _ := os.ReadFile(filepath.Join(h.dir, key)); string(b) {
	case "fits\n":
		return true, true
	case "prepare\n":
		return false, true
	}
	return false, false
}

// store writes the fact under key to the cache directory, atomically; a
// failure only costs the next process a probe.
func (h *Homes) store(key string, fits bool) {
	if h.dir == "" || os.MkdirAll(h.dir, 0o700) != nil {
		return
	}
	f, err := os.CreateTemp(h.dir, ".tmp-*")
	if err != nil {
		return
	}
	text := "prepare\n"
	if fits {
		text = "fits\n"
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil && cerr == nil && os.Rename(f.Name(), filepath.Join(h.dir, key)) == nil {
		return
	}
	_ = os.Remove(f.Name())
}

// homeFits reports whether the created container already has what
// DirsTar's archive would make of dirs: each a directory owned by uid:gid
// that it can write and search, under parents everyone can search.
func homeFits(ctx context.Context, a Archiver, dirs []string, uid, gid int) (bool, error) {
	owned := map[string]bool{}
	for _, d := range dirs {
		owned[d] = true
	}
	var paths []string // dirs and their parents, but "/"
	seen := map[string]bool{}
	for _, d := range dirs {
		for p := d; p != "/" && !seen[p]; p = path.Dir(p) {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	hdrs, err := a.Headers(ctx, paths)
	if err != nil {
		return false, err
	}
	for i, hdr := range hdrs {
		switch {
		case hdr == nil || hdr.Typeflag != tar.TypeDir:
			return false, nil
		case owned[paths[i]] && (hdr.Uid != uid || hdr.Gid != gid || hdr.Mode&0o300 != 0o300):
			return false, nil
		case !owned[paths[i]] && hdr.Mode&0o001 == 0:
			return false, nil
		}
	}
	return len(hdrs) == len(paths), nil
}
