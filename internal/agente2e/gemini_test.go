//go:build agentse2e

package agente2e

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// Gemini serves the Gemini API (POST /v1beta/models/<model>:streamGenerateContent?alt=sse
// for turns, :generateContent for side calls such as the next-speaker
// check) under its URL: the Gemini CLI. The shell tool is
// run_shell_command; a tool result comes back as a functionResponse part.
func Gemini(t testing.TB, script Script) *Server {
	return newServer(t, script, func(s *Server, w http.ResponseWriter, r *http.Request, body map[string]any) {
		_, method, _ := strings.Cut(r.URL.Path, ":")
		if r.Method != http.MethodPost || !strings.Contains(r.URL.Path, "/models/") || (method != "streamGenerateContent" && method != "generateContent") {
			s.record(r, "unknown")
			geminiError(w, http.StatusNotFound, "NOT_FOUND", "not scripted")
			return
		}
		if s.script == Unauthorized {
			s.record(r, "401")
			geminiError(w, http.StatusUnauthorized, "UNAUTHENTICATED", ErrorMessage)
			return
		}
		if method == "generateContent" {
			// A side call asking for JSON (who speaks next): the user.
			s.record(r, "side")
			writeJSON(w, http.StatusOK, map[string]any{"candidates": []any{map[string]any{"index": 0, "finishReason": "STOP",
				"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": `{"reasoning": "scripted", "next_speaker": "user"}`}}}}}})
			return
		}
		var part map[string]any
		stage := "final"
		contents, _ := body["contents"].([]any)
		after := geminiAfterPrompt(contents)
		if geminiHasPart(after, "functionResponse") {
			part = map[string]any{"text": s.finalText()}
		} else {
			stage = "tool"
			if geminiHasPart(contents[:len(contents)-len(after)], "functionResponse") {
				stage = "tool after history" // a resumed or forked session
			}
			part = map[string]any{"functionCall": map[string]any{"name": "run_shell_command", "args": map[string]any{"command": CommitCommand, "description": "Commit e2e.txt"}}}
			if !geminiHasTool(body, "run_shell_command") {
				s.t.Errorf("the Gemini CLI offered no run_shell_command tool")
				stage, part = "no shell tool", map[string]any{"text": "no shell tool"}
			}
		}
		s.record(r, stage)
		model := strings.TrimPrefix(r.URL.Path[:strings.Index(r.URL.Path, ":")], "/v1beta/models/")
		e := startSSE(w)
		e.send("", map[string]any{
			"candidates": []any{map[string]any{"index": 0, "finishReason": "STOP", "content": map[string]any{"role": "model", "parts": []any{part}}}},
			"usageMetadata": map[string]any{"promptTokenCount": CallInput, "cachedContentTokenCount": CallCached,
				"candidatesTokenCount": CallOutput, "totalTokenCount": CallInput + CallOutput},
			"modelVersion": model, "responseId": "resp_e2e_" + stage,
		})
	})
}

// geminiError answers a Google API error.
func geminiError(w http.ResponseWriter, code int, status, message string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"code": code, "message": message, "status": status}})
}

// geminiAfterPrompt returns the contents from the last user prompt on: a
// user content with a text part (a tool result is a user content of
// functionResponse parts). A resumed session holds earlier turns before.
func geminiAfterPrompt(items []any) []any {
	last := 0
	for i, it := range items {
		m, _ := it.(map[string]any)
		parts, _ := m["parts"].([]any)
		for _, p := range parts {
			if p, _ := p.(map[string]any); m["role"] == "user" && p["text"] != nil {
				last = i
			}
		}
	}
	if len(items) == 0 {
		return nil
	}
	return items[last:]
}

// geminiHasPart reports whether contents hold a part of the kind (its key).
func geminiHasPart(contents []any, kind string) bool {
	for _, c := range contents {
		c, _ := c.(map[string]any)
		parts, _ := c["parts"].([]any)
		for _, p := range parts {
			if p, _ := p.(map[string]any); p[kind] != nil {
				return true
			}
		}
	}
	return false
}

func geminiHasTool(body map[string]any, name string) bool {
	b, _ := json.Marshal(body["tools"])
	return strings.Contains(string(b), `"name":"`+name+`"`)
}

var gemini = agentCase{cli: "gemini", keyVar: "GEMINI_API_KEY", server: Gemini, block: func(url string) string {
	return `agent "gemini" "e2e" {
  model    = "gemini-2.5-flash"
  base_url = "` + url + `"
}`
}}

func TestGemini(t *testing.T) {
	testAgent(t, gemini)
	// The first run's session, captured on the host, resumed (or forked)
	// in a fresh sandbox: the model sees the earlier turns, the iteration
	// reports its own usage only.
	for _, fork := range []bool{false, true} {
		name := map[bool]string{false: "resume", true: "fork"}[fork]
		t.Run(name, func(t *testing.T) {
			repo := gitRepo(t)
			s := Gemini(t, Commit)
			first := sandduneRun(t, repo, gemini, s.URL, "")
			checkCommitRun(t, repo, first, s)
			git(t, repo, "merge", "-q", "--ff-only", "agent/e2e")
			git(t, repo, "branch", "-q", "-D", "agent/e2e")
			id := *first.Iterations[0].SessionID
			extra := ""
			if fork {
				extra = "  fork_session = true\n"
			}
			o := sandduneRun(t, repo, gemini, s.URL, extra, "--var", "iterations=1", "--var", "resume="+id)
			checkCommitRun(t, repo, o, s)
			if got := s.Requests(); !slices.Contains(got, "POST /v1beta/models/gemini-2.5-flash:streamGenerateContent tool after history") {
				t.Fatalf("the %s iteration's model call carried no earlier turns: %v", name, got)
			}
			if same := *o.Iterations[0].SessionID == id; same == fork {
				t.Fatalf("%s: session %s after %s", name, *o.Iterations[0].SessionID, id)
			}
		})
	}
}
