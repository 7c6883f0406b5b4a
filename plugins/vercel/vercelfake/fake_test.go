package vercelfake

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/internal/kittest"
)

func startServer(t *testing.T) *Server {
	t.Helper()
	kittest.RequireEngine(t, "bubblewrap (the fake Vercel API runs commands with it)", Available())
	s, err := New(Options{Token: "tok", TeamID: "team"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func call(t *testing.T, s *Server, method, path, ctype, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok")
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

// TestFakeWireFormat checks the documented framing: auth, the /api prefix,
// JSON content types, the wait:true NDJSON stream, and 410 after stop.
func TestFakeWireFormat(t *testing.T) {
	t.Parallel()
	s := startServer(t)
	const js = "application/json"
	resp, body := call(t, s, "POST", "/api/v3/sandboxes?teamId=team", js, `{"projectId":"prj","persistent":false}`)
	if resp.StatusCode != 200 {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	var created struct {
		Sandbox struct{ Name string }
		Session struct{ ID, Status, Cwd string }
	}
	if err := json.Unmarshal([]byte(body), &created); err != nil || created.Session.Status != "running" || created.Session.Cwd != "/vercel/sandbox" {
		t.Fatalf("create: %s", body)
	}
	sess := "/v2/sandboxes/sessions/" + created.Session.ID

	if resp, body := call(t, s, "POST", "/v2/sandboxes?teamId=other", js, `{"projectId":"prj"}`); resp.StatusCode != 403 || !strings.Contains(body, `"code":"forbidden"`) {
		t.Errorf("wrong team: %d %s", resp.StatusCode, body)
	}
	if resp, body := call(t, s, "POST", sess+"/stop?teamId=team", "", ""); resp.StatusCode != 415 {
		t.Errorf("POST without a JSON content type: %d %s", resp.StatusCode, body)
	}

	resp, body = call(t, s, "POST", sess+"/cmd?teamId=team", js, `{"command":"sh","args":["-c","printf a; echo b >&2; exit 3"],"wait":true,"logs":true}`)
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("wait stream content type %q, want exactly application/x-ndjson", ct)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not NDJSON: %q", sc.Text())
		}
		lines = append(lines, m)
	}
	first, last := lines[0]["command"].(map[string]any), lines[len(lines)-1]["command"].(map[string]any)
	if len(lines) != 4 || first["exitCode"] != nil || last["exitCode"] != 3.0 || last["durationMs"] == nil {
		t.Errorf("stream %s: want started command, 2 log lines, finished command with exit 3", body)
	}

	if resp, body := call(t, s, "POST", sess+"/fs/read?teamId=team", js, `{"path":"missing"}`); resp.StatusCode != 404 || !strings.Contains(body, "not_found") {
		t.Errorf("read of a missing file: %d %s", resp.StatusCode, body)
	}
	if resp, body := call(t, s, "POST", sess+"/fs/mkdir?teamId=team", js, `{"path":"a/b"}`); resp.StatusCode != 400 {
		t.Errorf("mkdir is not recursive: %d %s", resp.StatusCode, body)
	}
	if resp, body := call(t, s, "POST", sess+"/stop?teamId=team", js, ""); resp.StatusCode != 200 || !strings.Contains(body, `"status":"stopped"`) {
		t.Errorf("stop: %d %s", resp.StatusCode, body)
	}
	if resp, body := call(t, s, "POST", sess+"/cmd?teamId=team", js, `{"command":"true"}`); resp.StatusCode != 410 || !strings.Contains(body, "sandbox_stopped") {
		t.Errorf("cmd after stop: %d %s", resp.StatusCode, body)
	}
	if resp, body := call(t, s, "DELETE", "/v2/sandboxes/"+created.Sandbox.Name+"?teamId=team&projectId=prj", "", ""); resp.StatusCode != 200 {
		t.Errorf("delete: %d %s", resp.StatusCode, body)
	}
	if resp, _ := call(t, s, "DELETE", "/v2/sandboxes/"+created.Sandbox.Name+"?teamId=team", "", ""); resp.StatusCode != 404 {
		t.Errorf("delete again: %d, want 404", resp.StatusCode)
	}
}
