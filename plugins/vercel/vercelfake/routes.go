package vercelfake

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// route is a parsed request path.
type route struct {
	name              Route
	sandbox, sid, cid string
}

// parse maps a method and path (with or without the /api prefix) to a
// route.
func parse(method, p string) route {
	p = strings.TrimPrefix(p, "/api")
	parts := strings.Split(strings.Trim(p, "/"), "/")
	n := len(parts)
	switch {
	case n == 2 && (parts[0] == "v3" || parts[0] == "v2") && parts[1] == "sandboxes" && method == http.MethodPost:
		return route{name: RouteCreate}
	case n < 3 || parts[0] != "v2" || parts[1] != "sandboxes":
		if n == 2 && parts[0] == "v2" && parts[1] == "sandboxes" && method == http.MethodGet {
			return route{name: RouteList}
		}
		return route{name: RouteNotFound}
	case parts[2] != "sessions" && n == 3:
		switch method {
		case http.MethodGet:
			return route{name: RouteGet, sandbox: parts[2]}
		case http.MethodDelete:
			return route{name: RouteDelete, sandbox: parts[2]}
		}
	case parts[2] == "sessions" && n >= 4:
		r := route{sid: parts[3]}
		rest := strings.Join(parts[4:], "/")
		switch {
		case rest == "" && method == http.MethodGet:
			r.name = RouteSession
		case rest == "cmd" && method == http.MethodPost:
			r.name = RouteCmd
		case n == 6 && parts[4] == "cmd" && method == http.MethodGet:
			r.name, r.cid = RouteCmdGet, parts[5]
		case n == 7 && parts[4] == "cmd" && parts[6] == "logs" && method == http.MethodGet:
			r.name, r.cid = RouteCmdLogs, parts[5]
		case n == 7 && parts[4] == "cmd" && parts[6] == "kill" && method == http.MethodPost:
			r.name, r.cid = RouteCmdKill, parts[5]
		case rest == "fs/mkdir" && method == http.MethodPost:
			r.name = RouteMkdir
		case rest == "fs/write" && method == http.MethodPost:
			r.name = RouteWrite
		case rest == "fs/read" && method == http.MethodPost:
			r.name = RouteRead
		case rest == "stop" && method == http.MethodPost:
			r.name = RouteStop
		case rest == "extend-timeout" && method == http.MethodPost:
			r.name = RouteExtend
		default:
			r.name = RouteNotFound
		}
		return r
	}
	return route{name: RouteNotFound}
}

func (s *Server) serve(rw http.ResponseWriter, r *http.Request) {
	w := &statusWriter{ResponseWriter: rw}
	rt := parse(r.Method, r.URL.Path)
	rec := Request{Method: r.Method, Route: rt.name, Path: r.URL.Path, TeamID: r.URL.Query().Get("teamId")}
	var served chan<- struct{}
	defer func() {
		rec.Status = w.status
		s.record(rec)
		if served != nil {
			close(served)
		}
	}()
	w.Header().Set("X-Vercel-Id", newID("iad1::"))

	if e := s.check(r, rt); e != nil {
		writeError(w, e)
		return
	}
	var body []byte
	if rt.name != RouteWrite && r.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if rt.name == RouteCreate || rt.name == RouteCmd {
			rec.Body = body
		}
	}
	if f := s.fault(rt.name, nil, false); f != nil {
		if f.Hold != nil {
			<-f.Hold
		}
		served = f.Served
		if f.Status != 0 {
			if f.RetryAfter != "" {
				w.Header().Set("Retry-After", f.RetryAfter)
			}
			code := f.Code
			if code == "" {
				code = "internal_server_error"
				if f.Status == http.StatusTooManyRequests {
					code = "rate_limited"
				}
			}
			writeError(w, errorf(f.Status, code, "injected fault"))
			return
		}
	}
	var err error
	switch rt.name {
	case RouteCreate:
		err = s.create(w, r, body)
	case RouteList:
		err = s.list(w, r)
	case RouteGet, RouteDelete:
		err = s.named(w, r, rt)
	case RouteNotFound:
		err = errorf(http.StatusNotFound, "not_found", "no route %s %s", r.Method, r.URL.Path)
	default:
		err = s.sessionRoute(w, r, rt, body)
	}
	if err != nil {
		writeError(w, asAPIError(err))
	}
}

// check authenticates and checks the content type of JSON POSTs.
func (s *Server) check(r *http.Request, rt route) *apiError {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" || s.opts.Token != "" && tok != s.opts.Token {
		return errorf(http.StatusForbidden, "forbidden", "Not authorized")
	}
	if s.opts.TeamID != "" && r.URL.Query().Get("teamId") != s.opts.TeamID {
		return errorf(http.StatusForbidden, "forbidden", "Not authorized for this team")
	}
	if r.Method != http.MethodPost {
		return nil
	}
	ct := r.Header.Get("Content-Type")
	if rt.name == RouteWrite {
		if !strings.HasPrefix(ct, "application/gzip") {
			return errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "fs/write takes application/gzip")
		}
		return nil
	}
	if !strings.HasPrefix(ct, "application/json") {
		return errorf(http.StatusUnsupportedMediaType, "unsupported_media_type", "a JSON body needs Content-Type application/json")
	}
	return nil
}

// decode reads a JSON body; an empty body is {}.
func decode(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errorf(http.StatusBadRequest, "bad_request", "invalid JSON body: %v", err)
	}
	return nil
}

// createRequest is the body of create.
type createRequest struct {
	ProjectID     string              `json:"projectId"`
	Name          string              `json:"name"`
	Runtime       string              `json:"runtime"`
	Image         string              `json:"image"`
	Ports         []int               `json:"ports"`
	Timeout       int64               `json:"timeout"`
	Resources     struct{ Vcpus int } `json:"resources"`
	Persistent    *bool               `json:"persistent"`
	Env           map[string]string   `json:"env"`
	Tags          map[string]string   `json:"tags"`
	NetworkPolicy json.RawMessage     `json:"networkPolicy"`
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, body []byte) error {
	var req createRequest
	if err := decode(body, &req); err != nil {
		return err
	}
	switch {
	case req.ProjectID == "":
		return errorf(http.StatusBadRequest, "bad_request", "projectId is required")
	case req.Runtime != "" && req.Image != "":
		return errorf(http.StatusBadRequest, "bad_request", "runtime and image cannot be combined")
	case req.Resources.Vcpus < 0 || req.Resources.Vcpus > 1 && req.Resources.Vcpus%2 != 0:
		return errorf(http.StatusBadRequest, "bad_request", "resources.vcpus must be 1 or an even number")
	case len(req.Tags) > 5:
		return errorf(http.StatusBadRequest, "bad_request", "at most 5 tags")
	case len(req.Ports) > 15:
		return errorf(http.StatusBadRequest, "bad_request", "at most 15 ports")
	}
	sb := &sandbox{
		name: req.Name, projectID: req.ProjectID, persistent: true, runtime: req.Runtime,
		vcpus: req.Resources.Vcpus, timeout: req.Timeout, ports: req.Ports, env: req.Env, tags: req.Tags,
		networkPolicy: req.NetworkPolicy, createdAt: now(),
	}
	if req.Persistent != nil {
		sb.persistent = *req.Persistent
	}
	if sb.vcpus == 0 {
		sb.vcpus = defaultVcpus
	}
	if sb.timeout == 0 {
		sb.timeout = defaultTimeout
	}
	if sb.tags == nil {
		sb.tags = map[string]string{}
	}
	if sb.name == "" {
		sb.name = newID("sbx-")
	}
	sb.updatedAt = sb.createdAt
	s.mu.Lock()
	if _, taken := s.sandboxes[sb.name]; taken {
		s.mu.Unlock()
		return errorf(http.StatusConflict, "conflict", "a sandbox named %q already exists", sb.name)
	}
	s.sandboxes[sb.name] = sb
	s.mu.Unlock()
	se, err := s.newSession(sb)
	if err != nil {
		s.mu.Lock()
		delete(s.sandboxes, sb.name)
		s.mu.Unlock()
		return err
	}
	s.mu.Lock()
	sb.current = se
	s.sessions[se.id] = se
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"sandbox": sb.json(), "session": se.json(), "routes": []any{}, "resumed": false})
	return nil
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit := 50
	if n, ok := parseInt(q.Get("limit")); ok && n > 0 && n <= 100 {
		limit = n
	}
	s.mu.Lock()
	var all []*sandbox
	for _, sb := range s.sandboxes {
		if p := q.Get("project"); p != "" && sb.projectID != p {
			continue
		}
		if !strings.HasPrefix(sb.name, q.Get("namePrefix")) {
			continue
		}
		if t := q.Get("tags"); t != "" {
			k, v, _ := strings.Cut(t, ":")
			if sb.tags[k] != v {
				continue
			}
		}
		all = append(all, sb)
	}
	s.mu.Unlock()
	sortByName(all)
	start := 0
	if c := q.Get("cursor"); c != "" {
		for start < len(all) && all[start].name <= c {
			start++
		}
	}
	page := all[start:min(start+limit, len(all))]
	var next any
	if start+limit < len(all) {
		next = page[len(page)-1].name
	}
	out := make([]any, 0, len(page))
	for _, sb := range page {
		out = append(out, sb.json())
	}
	writeJSON(w, http.StatusOK, map[string]any{"sandboxes": out, "pagination": map[string]any{"count": len(out), "next": next}})
	return nil
}

func sortByName(sbs []*sandbox) {
	for i := 1; i < len(sbs); i++ {
		for j := i; j > 0 && sbs[j].name < sbs[j-1].name; j-- {
			sbs[j], sbs[j-1] = sbs[j-1], sbs[j]
		}
	}
}

// named serves GET and DELETE /v2/sandboxes/{name}.
func (s *Server) named(w http.ResponseWriter, r *http.Request, rt route) error {
	s.mu.Lock()
	sb := s.sandboxes[rt.sandbox]
	s.mu.Unlock()
	if sb == nil {
		return errorf(http.StatusNotFound, "not_found", "Sandbox %q not found", rt.sandbox)
	}
	if p := r.URL.Query().Get("projectId"); p != "" && p != sb.projectID {
		return errorf(http.StatusNotFound, "not_found", "Sandbox %q not found in project %q", rt.sandbox, p)
	}
	if rt.name == RouteGet {
		writeJSON(w, http.StatusOK, map[string]any{"sandbox": sb.json(), "session": sb.current.json(), "routes": []any{}, "resumed": false})
		return nil
	}
	s.stopSession(sb.current)
	s.mu.Lock()
	delete(s.sandboxes, sb.name)
	delete(s.sessions, sb.current.id)
	s.mu.Unlock()
	_ = removeAll(sb.current.dir)
	writeJSON(w, http.StatusOK, map[string]any{"sandbox": sb.json()})
	return nil
}
