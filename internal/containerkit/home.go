package containerkit

import (
	"archive/tar"
	"bytes"
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
	fits   map[string]bool   // factKey → fits
}

// NewHomes is an engine's Homes (engine keys its facts: image ids of two
// engines' stores are not compared).
func NewHomes(engine string) *Homes {
	h := &Homes{engine: engine, images: map[string]string{}, fits: map[string]bool{}}
	if dir, err := os.UserCacheDir(); err == nil {
		h.dir = filepath.Join(dir, "sanddune", "home")
	}
	return h
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

// known reports the fact under key, from this process or the cache
// directory.
func (h *Homes) known(key string) (fits, ok bool) {
	h.mu.Lock()
	fits, ok = h.fits[key]
	h.mu.Unlock()
	if ok || h.dir == "" {
		return fits, ok
	}
	switch b, _ := os.ReadFile(filepath.Join(h.dir, key)); string(b) {
	case "fits\n":
		fits = true
	case "prepare\n":
	default:
		return false, false
	}
	h.mu.Lock()
	h.fits[key] = fits
	h.mu.Unlock()
	return fits, true
}

// remember records the fact under key, in this process and (written
// atomically; a failure only costs the next process a probe) in the cache
// directory.
func (h *Homes) remember(key string, fits bool) {
	h.mu.Lock()
	h.fits[key] = fits
	h.mu.Unlock()
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

// PrepareHome makes, in a created container before it starts, the agent
// home's directories owned by the container user (OwnedDirs, one archive
// extracted at "/"), unless the image already has them so (homeFits). That
// is learnt once per image id (ImageID, "" when unknown: then the home is
// prepared without asking) from the container itself, and remembered in h.
func (s Spec) PrepareHome(ctx context.Context, a Archiver, h *Homes) error {
	dirs := OwnedDirs(s.Binds, s.hasWorktree)
	if s.ImageID != "" {
		key := h.factKey(s.ImageID, s.UID, s.GID, dirs)
		fits, ok := h.known(key)
		if !ok {
			var err error
			if fits, err = homeFits(ctx, a, dirs, s.UID, s.GID); err == nil {
				h.remember(key, fits)
			}
		}
		if fits {
			return nil
		}
	}
	var buf bytes.Buffer
	if err := DirsTar(&buf, dirs, s.UID, s.GID); err != nil {
		return err
	}
	if err := a.PutArchive(ctx, "/", &buf); err != nil {
		return fmt.Errorf("prepare %s: %w", HomeDir, err)
	}
	return nil
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
