package vercelfake

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
	"time"
)

// sessionRoute serves the routes under /v2/sandboxes/sessions/{sid}.
func (s *Server) sessionRoute(w http.ResponseWriter, r *http.Request, rt route, body []byte) error {
	s.mu.Lock()
	se := s.sessions[rt.sid]
	s.mu.Unlock()
	if se == nil {
		return errorf(http.StatusNotFound, "not_found", "Session %q not found", rt.sid)
	}
	switch rt.name {
	case RouteSession:
		writeJSON(w, http.StatusOK, map[string]any{"session": se.json(), "routes": []any{}})
		return nil
	case RouteStop:
		s.stopSession(se)
		writeJSON(w, http.StatusOK, map[string]any{"session": se.json(), "sandbox": se.sb.json()})
		return nil
	}
	if se.state() != statusRunning {
		return errorf(http.StatusGone, "sandbox_stopped", "Sandbox is stopped")
	}
	switch rt.name {
	case RouteCmd:
		return s.runCommand(w, r, se, body)
	case RouteCmdGet, RouteCmdLogs, RouteCmdKill:
		se.mu.Lock()
		c := se.cmds[rt.cid]
		se.mu.Unlock()
		if c == nil {
			return errorf(http.StatusNotFound, "not_found", "Command %q not found", rt.cid)
		}
		switch rt.name {
		case RouteCmdGet:
			if r.URL.Query().Get("wait") == "true" {
				select {
				case <-c.done:
				case <-r.Context().Done():
					return nil
				}
			}
			writeJSON(w, http.StatusOK, map[string]any{"command": c.json()})
		case RouteCmdLogs:
			s.streamLogs(w, r, c)
		case RouteCmdKill:
			var req struct {
				Signal int `json:"signal"`
			}
			if err := decode(body, &req); err != nil {
				return err
			}
			if req.Signal <= 0 || req.Signal > 64 {
				return errorf(http.StatusBadRequest, "bad_request", "invalid signal %d", req.Signal)
			}
			select {
			case <-c.done:
				return errorf(http.StatusBadRequest, "bad_request", "Command %q is not running", c.id)
			default:
			}
			c.kill(req.Signal)
			writeJSON(w, http.StatusOK, map[string]any{"command": c.json()})
		}
		return nil
	case RouteMkdir:
		var req struct{ Path, Cwd string }
		if err := decode(body, &req); err != nil {
			return err
		}
		root, err := os.OpenRoot(se.dir)
		if err != nil {
			return err
		}
		defer root.Close()
		if err := root.Mkdir(rel(req.Path, req.Cwd), 0o755); err != nil {
			return errorf(http.StatusBadRequest, "bad_request", "mkdir %s: %v", req.Path, err)
		}
		writeJSON(w, http.StatusOK, map[string]any{})
		return nil
	case RouteWrite:
		if err := writeFiles(se.dir, r.Header.Get("x-cwd"), r.Body); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{})
		return nil
	case RouteRead:
		var req struct{ Path, Cwd string }
		if err := decode(body, &req); err != nil {
			return err
		}
		return readFile(w, se.dir, rel(req.Path, req.Cwd))
	case RouteExtend:
		var req struct{ Duration int64 }
		if err := decode(body, &req); err != nil {
			return err
		}
		se.mu.Lock()
		se.sb.timeout += req.Duration
		se.mu.Unlock()
		se.timer.Reset(time.Duration(se.sb.timeout)*time.Millisecond - time.Since(time.UnixMilli(se.createdAt)))
		writeJSON(w, http.StatusOK, map[string]any{"session": se.json()})
		return nil
	}
	return errorf(http.StatusNotFound, "not_found", "no route")
}

// rel resolves a sandbox path against cwd (default the session cwd) and
// returns it relative to the session directory.
func rel(p, cwd string) string {
	if cwd == "" {
		cwd = sessionCwd
	}
	if !path.IsAbs(p) {
		p = path.Join(cwd, p)
	}
	if p = strings.TrimPrefix(path.Clean(p), "/"); p == "" {
		return "."
	}
	return p
}

func (s *Server) runCommand(w http.ResponseWriter, r *http.Request, se *session, body []byte) error {
	var req cmdRequest
	if err := decode(body, &req); err != nil {
		return err
	}
	if req.Command == "" {
		return errorf(http.StatusBadRequest, "bad_request", "command is required")
	}
	c, err := s.start(se, req)
	if err != nil {
		return err
	}
	if !req.Wait {
		writeJSON(w, http.StatusOK, map[string]any{"command": c.json()})
		return nil
	}
	// wait: the started command, its logs (with logs:true), the finished one.
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	_ = enc.Encode(map[string]any{"command": c.json()})
	flush()
	s.follow(r, c, func(l logLine) bool {
		if req.Logs {
			_ = enc.Encode(l)
			flush()
		}
		return true
	})
	_ = enc.Encode(map[string]any{"command": c.json()})
	flush()
	return nil
}

// follow calls line for each log line of c, from the start, until c ended
// and every line went out, the request is gone or line returns false.
func (s *Server) follow(r *http.Request, c *command, line func(logLine) bool) {
	i := 0
	for {
		lines, ended, changed := c.snapshot(i)
		for _, l := range lines {
			if !line(l) {
				return
			}
		}
		i += len(lines)
		if ended {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}

// streamLogs serves .../cmd/{cid}/logs: NDJSON from the start, following
// until the command ends; a drop fault cuts the connection mid-stream.
func (s *Server) streamLogs(w http.ResponseWriter, r *http.Request, c *command) {
	f := s.fault(RouteCmdLogs, c, true)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	n := 0
	s.follow(r, c, func(l logLine) bool {
		_ = enc.Encode(l)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		n++
		return f == nil || n < f.DropAfterLines
	})
	if f != nil {
		panic(http.ErrAbortHandler) // no terminating chunk: a broken stream
	}
}

// writeFiles extracts a gzip tar into the session directory, names
// relative to xcwd (default /). Parents are created; regular files and
// directories only.
func writeFiles(dir, xcwd string, body io.Reader) error {
	if xcwd == "" {
		xcwd = "/"
	}
	zr, err := gzip.NewReader(body)
	if err != nil {
		return errorf(http.StatusBadRequest, "bad_request", "body is not gzip: %v", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return errorf(http.StatusBadRequest, "bad_request", "invalid tar: %v", err)
		}
		name := rel(h.Name, xcwd)
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return errorf(http.StatusBadRequest, "bad_request", "%s: %v", h.Name, err)
		}
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, mode); err != nil {
				return errorf(http.StatusBadRequest, "bad_request", "%s: %v", h.Name, err)
			}
		case tar.TypeReg:
			f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
			if err != nil {
				return errorf(http.StatusBadRequest, "bad_request", "%s: %v", h.Name, err)
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = root.Chmod(name, mode)
			}
			if err != nil {
				return errorf(http.StatusBadRequest, "bad_request", "%s: %v", h.Name, err)
			}
		default:
			return errorf(http.StatusBadRequest, "bad_request", "%s: only regular files and directories can be written", h.Name)
		}
	}
}

// readFile serves fs/read: raw bytes, 404 when missing.
func readFile(w http.ResponseWriter, dir, name string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	f, err := root.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return errorf(http.StatusNotFound, "not_found", "File not found: /%s", name)
	}
	if err != nil {
		return errorf(http.StatusBadRequest, "bad_request", "/%s: %v", name, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return errorf(http.StatusBadRequest, "bad_request", "/%s is not a regular file", name)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="`+path.Base(name)+`"`)
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, f)
	return nil
}
