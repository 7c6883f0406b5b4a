package vercel

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"time"
)

// The typed API: the v2 named-sandbox + session routes, created with
// POST /v3/sandboxes (POST /v2/sandboxes with a runtime), as the official
// SDK 3.x does.

type apiSandbox struct {
	Name             string            `json:"name"`
	Persistent       bool              `json:"persistent"`
	Status           string            `json:"status"`
	CurrentSessionID string            `json:"currentSessionId"`
	Tags             map[string]string `json:"tags"`
}

type apiSession struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Cwd    string `json:"cwd"`
}

type apiCommand struct {
	ID       string `json:"id"`
	ExitCode *int   `json:"exitCode"`
}

type createBody struct {
	ProjectID     string            `json:"projectId"`
	Name          string            `json:"name"`
	Runtime       string            `json:"runtime,omitempty"`
	Ports         []int             `json:"ports"`
	Timeout       int64             `json:"timeout"`
	Resources     *resources        `json:"resources,omitempty"`
	Persistent    bool              `json:"persistent"`
	Tags          map[string]string `json:"tags,omitempty"`
	NetworkPolicy json.RawMessage   `json:"networkPolicy,omitempty"`
}

type resources struct {
	Vcpus int `json:"vcpus"`
}

type sandboxAndSession struct {
	Sandbox apiSandbox `json:"sandbox"`
	Session apiSession `json:"session"`
}

func (c *client) create(ctx context.Context, body createBody) (sandboxAndSession, error) {
	p := "/v3/sandboxes"
	if body.Runtime != "" {
		p = "/v2/sandboxes"
	}
	var out sandboxAndSession
	r := jsonRequest(http.MethodPost, p, body)
	// A retried create that finds its name taken gets the first one's.
	r.retry = retryAll
	err := c.call(ctx, r, &out)
	if isStatus(err, http.StatusConflict) {
		return c.get(ctx, body.Name, body.ProjectID)
	}
	return out, err
}

func (c *client) get(ctx context.Context, name, projectID string) (sandboxAndSession, error) {
	r := jsonRequest(http.MethodGet, "/v2/sandboxes/"+url.PathEscape(name), nil)
	r.query = url.Values{"projectId": {projectID}}
	var out sandboxAndSession
	return out, c.call(ctx, r, &out)
}

func (c *client) session(ctx context.Context, sid string) (apiSession, error) {
	var out struct {
		Session apiSession `json:"session"`
	}
	err := c.call(ctx, jsonRequest(http.MethodGet, sessionPath(sid, ""), nil), &out)
	return out.Session, err
}

// list returns one page of sandboxes whose names start with prefix, and
// the cursor of the next page ("" at the end).
func (c *client) list(ctx context.Context, projectID, prefix, cursor string) ([]apiSandbox, string, error) {
	r := jsonRequest(http.MethodGet, "/v2/sandboxes", nil)
	r.query = url.Values{"project": {projectID}, "namePrefix": {prefix}, "limit": {"100"}, "sortBy": {"name"}}
	if cursor != "" {
		r.query.Set("cursor", cursor)
	}
	var out struct {
		Sandboxes  []apiSandbox `json:"sandboxes"`
		Pagination struct {
			Next *string `json:"next"`
		} `json:"pagination"`
	}
	if err := c.call(ctx, r, &out); err != nil {
		return nil, "", err
	}
	next := ""
	if out.Pagination.Next != nil {
		next = *out.Pagination.Next
	}
	return out.Sandboxes, next, nil
}

// remove deletes a named sandbox (stopping its session first); an unknown
// name is not an error.
func (c *client) remove(ctx context.Context, name, projectID string) error {
	r := jsonRequest(http.MethodDelete, "/v2/sandboxes/"+url.PathEscape(name), nil)
	r.query = url.Values{"projectId": {projectID}}
	err := c.call(ctx, r, nil)
	if isStatus(err, http.StatusNotFound) {
		return nil
	}
	return err
}

// stop stops a session; one already stopped is not an error.
func (c *client) stop(ctx context.Context, sid string) error {
	err := c.call(ctx, jsonRequest(http.MethodPost, sessionPath(sid, "/stop"), nil), nil)
	if isStatus(err, http.StatusGone) || isStatus(err, http.StatusNotFound) {
		return nil
	}
	return err
}

type cmdBody struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Cwd     string            `json:"cwd,omitempty"`
	Env     map[string]string `json:"env"`
	Sudo    bool              `json:"sudo"`
	// Timeout (ms) makes the API kill the command even when nobody is
	// left to do it.
	Timeout int64 `json:"timeout,omitempty"`
}

// start runs a detached command. Only a 429 is retried: the command must
// not run twice.
func (c *client) start(ctx context.Context, sid string, body cmdBody) (apiCommand, error) {
	r := jsonRequest(http.MethodPost, sessionPath(sid, "/cmd"), body)
	r.retry = retryRateLimit
	var out struct {
		Command apiCommand `json:"command"`
	}
	return out.Command, c.call(ctx, r, &out)
}

// logs opens a command's NDJSON log stream (from its start, following it
// until it exits).
func (c *client) logs(ctx context.Context, sid, cid string) (io.ReadCloser, error) {
	r := jsonRequest(http.MethodGet, sessionPath(sid, "/cmd/"+url.PathEscape(cid)+"/logs"), nil)
	r.stream = true
	resp, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// wait waits for a command to exit.
func (c *client) wait(ctx context.Context, sid, cid string) (apiCommand, error) {
	r := jsonRequest(http.MethodGet, sessionPath(sid, "/cmd/"+url.PathEscape(cid)), nil)
	r.query = url.Values{"wait": {"true"}}
	var out struct {
		Command apiCommand `json:"command"`
	}
	return out.Command, c.call(ctx, r, &out)
}

// kill signals a running command.
func (c *client) kill(ctx context.Context, sid, cid string, signal int) error {
	r := jsonRequest(http.MethodPost, sessionPath(sid, "/cmd/"+url.PathEscape(cid)+"/kill"), map[string]int{"signal": signal})
	return c.call(ctx, r, nil)
}

// file is one regular file for writeFiles.
type file struct {
	path    string // absolute
	mode    int64
	content []byte
}

// writeFiles uploads files as a gzip tar extracted at /; the API creates
// missing parent directories.
func (c *client) writeFiles(ctx context.Context, sid string, files ...file) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		h := &tar.Header{Name: f.path[1:], Mode: f.mode, Size: int64(len(f.content)), Typeflag: tar.TypeReg, ModTime: time.Now()}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(f.content); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	r := request{method: http.MethodPost, path: sessionPath(sid, "/fs/write"), body: buf.Bytes(),
		contentType: "application/gzip", header: map[string]string{"x-cwd": "/"}, retry: retryAll}
	return c.call(ctx, r, nil)
}

// readFile streams a file's bytes; a missing file is a 404 APIError.
func (c *client) readFile(ctx context.Context, sid, p string) (io.ReadCloser, error) {
	r := jsonRequest(http.MethodPost, sessionPath(sid, "/fs/read"), map[string]string{"path": p})
	r.stream = true
	resp, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

func sessionPath(sid, rest string) string {
	return "/v2/sandboxes/sessions/" + url.PathEscape(sid) + rest
}
