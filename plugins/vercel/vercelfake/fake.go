// Package vercelfake is a fake Vercel Sandbox API server for tests: the v2
// named-sandbox + session routes the vercel plugin and the official
// @vercel/sandbox SDK use (as documented by Vercel), with the
// documented JSON shapes, status and error codes, NDJSON framing and gzip
// tar uploads.
//
// Commands really run: each session is a directory on this machine that
// every command sees as its whole filesystem (/vercel/sandbox, /tmp, /home
// and /root are the session's own; the host's /usr and /etc are mounted
// read-only), in its own bubblewrap namespaces, so git really runs and
// nothing outside the session directory is reachable. Killing a command
// kills its whole process tree. A deny-all network policy unshares the
// network; an allowlist is recorded but not enforced.
//
// Faults are injected with Inject: a status (429 with Retry-After, 5xx,
// 422...) on a route, a hold (slow create), or a log stream dropped
// mid-command. Requests records what the server saw.
//
// Where the reference leaves a behaviour open, the fake picks one and says
// so: fs/read of a directory is 400 bad_request, create with a taken name
// is 409 conflict, fs/write takes regular files and directories, and
// symlinks in the session directory may not point outside it (fs calls
// through an absolute or escaping symlink fail with 400).
package vercelfake

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configure a Server.
type Options struct {
	// Token is the bearer token the server accepts; empty accepts any.
	Token string
	// TeamID, when set, is the only teamId query value accepted.
	TeamID string
}

// Route names one API route, for faults and the request log.
type Route string

const (
	RouteCreate   Route = "create"    // POST /v3/sandboxes, /v2/sandboxes
	RouteList     Route = "list"      // GET /v2/sandboxes
	RouteGet      Route = "get"       // GET /v2/sandboxes/{name}
	RouteDelete   Route = "delete"    // DELETE /v2/sandboxes/{name}
	RouteSession  Route = "session"   // GET /v2/sandboxes/sessions/{sid}
	RouteCmd      Route = "cmd"       // POST .../cmd
	RouteCmdGet   Route = "cmd.get"   // GET .../cmd/{cid}
	RouteCmdLogs  Route = "cmd.logs"  // GET .../cmd/{cid}/logs
	RouteCmdKill  Route = "cmd.kill"  // POST .../cmd/{cid}/kill
	RouteMkdir    Route = "fs.mkdir"  // POST .../fs/mkdir
	RouteWrite    Route = "fs.write"  // POST .../fs/write
	RouteRead     Route = "fs.read"   // POST .../fs/read
	RouteStop     Route = "stop"      // POST .../stop
	RouteExtend   Route = "extend"    // POST .../extend-timeout
	RouteNotFound Route = "not-found" // anything else
)

// Fault is an injected failure on a route. It applies to the next Times
// matching requests (1 when zero).
type Fault struct {
	Route Route
	// Status answers with this status and the error Code (default
	// "internal_server_error", "rate_limited" for 429).
	Status int
	Code   string
	// RetryAfter is sent as the Retry-After header.
	RetryAfter string
	// Hold, when set, holds the request until Hold is closed, then serves
	// it normally (a slow create, answered after its client gave up);
	// Served, when set, is closed once that request was answered (Times 1).
	Hold   <-chan struct{}
	Served chan<- struct{}
	// DropAfterLines (RouteCmdLogs) cuts the connection after this many
	// log lines, without ending the chunked body: the client sees a broken
	// stream. Command, when set, narrows it to a command whose argv
	// contains it (status and delay faults ignore Command).
	DropAfterLines int
	Command        string
	Times          int
}

// Request is one request the server saw.
type Request struct {
	Method string
	Route  Route
	Path   string
	TeamID string
	Status int
	// Body is the JSON body of create and cmd requests.
	Body json.RawMessage
}

// Server is a running fake. Close it when done.
type Server struct {
	URL  string
	opts Options
	srv  *httptest.Server
	root string
	bwrap

	mu        sync.Mutex
	sandboxes map[string]*sandbox // by name
	sessions  map[string]*session // by id
	faults    []*Fault
	requests  []Request
}

// Available reports why commands cannot run here (bubblewrap missing or
// unable to create namespaces), or nil.
func Available() error {
	b, err := findBwrap()
	if err != nil {
		return err
	}
	out, err := exec.Command(b.path, append(b.base(), "--", "true")...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("bubblewrap cannot create a sandbox here: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// New starts a server on a local port.
func New(opts Options) (*Server, error) {
	b, err := findBwrap()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "sanddune-vercelfake-")
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, root: root, bwrap: b, sandboxes: map[string]*sandbox{}, sessions: map[string]*session{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s, nil
}

// Close stops every session, the server and removes the session
// directories.
func (s *Server) Close() {
	s.mu.Lock()
	sessions := make([]*session, 0, len(s.sessions))
	for _, se := range s.sessions {
		sessions = append(sessions, se)
	}
	s.mu.Unlock()
	for _, se := range sessions {
		s.stopSession(se)
	}
	s.srv.CloseClientConnections()
	s.srv.Close()
	_ = os.RemoveAll(s.root)
}

// Inject adds a fault.
func (s *Server) Inject(f Fault) {
	if f.Times == 0 {
		f.Times = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// Requests returns the requests seen so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Sandboxes returns the names of the sandboxes that exist, sorted.
func (s *Server) Sandboxes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for n := range s.sandboxes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// RunningSessions counts the sessions that are not stopped.
func (s *Server) RunningSessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, se := range s.sessions {
		if se.status == statusRunning {
			n++
		}
	}
	return n
}

// fault takes the first matching fault, if any: a dropped-stream fault
// when drop, a status or delay otherwise.
func (s *Server) fault(route Route, cmd *command, drop bool) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.Route != route || (f.DropAfterLines > 0) != drop {
			continue
		}
		if drop && f.Command != "" && (cmd == nil || !strings.Contains(strings.Join(append([]string{cmd.name}, cmd.args...), " "), f.Command)) {
			continue
		}
		if f.Times--; f.Times <= 0 {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
		}
		return f
	}
	return nil
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
}

func newID(prefix string) string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func now() int64 { return time.Now().UnixMilli() }

// apiError is the documented error body.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{status, code, fmt.Sprintf(format, args...)}
}

// statusWriter remembers the status for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, map[string]any{"error": map[string]string{"code": e.code, "message": e.message}})
}

// asAPIError maps an error to the error response.
func asAPIError(err error) *apiError {
	var e *apiError
	if errors.As(err, &e) {
		return e
	}
	return errorf(http.StatusInternalServerError, "internal_server_error", "%v", err)
}

func parseInt(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil
}
