//go:build agentse2e

package agente2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Script is what a model server answers.
type Script int

const (
	// Commit: the first turn calls the CLI's shell tool with CommitCommand,
	// the turn after the tool result answers FinalText.
	Commit Script = iota
	// Unauthorized: every model call fails with 401 and ErrorMessage.
	Unauthorized
	// NoSignal is Commit whose final text lacks the completion signal.
	NoSignal
	// Output is Commit whose final text carries OutputText too.
	Output
)

const (
	CommitCommand = `echo e2e >> e2e.txt && git add e2e.txt && git -c user.name=agent -c user.email=agent@example.com commit -qm 'e2e: agent commit'`
	FinalText     = "Committed e2e.txt. <promise>COMPLETE</promise>"
	NoSignalText  = "Committed e2e.txt, more to do."
	ErrorMessage  = "scripted 401: invalid api key"
	OutputText    = `<plan>{"steps": 1}</plan>`
	// Each scripted model call reports these tokens: the tool call turn
	// and the final turn, so an iteration uses 2x of each.
	CallInput, CallCached, CallOutput = 150, 50, 12
)

// Server is a scripted model API on 127.0.0.1, or on the docker bridge's
// address on the host (listenHost) when docker is there: a container
// reaches it there, and a bubblewrap sandbox (the host's network) too.
type Server struct {
	*httptest.Server
	script Script
	t      testing.TB
	mu     sync.Mutex
	log    []string // "METHOD path stage", every request
}

// Requests returns what the server was asked, in order.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

func (s *Server) record(r *http.Request, stage string) {
	s.mu.Lock()
	s.log = append(s.log, r.Method+" "+r.URL.Path+" "+stage)
	s.mu.Unlock()
}

func newServer(t testing.TB, script Script, h func(s *Server, w http.ResponseWriter, r *http.Request, body map[string]any)) *Server {
	s := &Server{script: script, t: t}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(b, &body)
		}
		h(s, w, r, body)
	}))
	ln, err := net.Listen("tcp4", net.JoinHostPort(listenHost, "0"))
	if err != nil {
		t.Fatal(err)
	}
	s.Server.Listener.Close()
	s.Server.Listener = ln
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// sse writes server-sent events, each an event name and a JSON payload.
type sse struct{ w http.ResponseWriter }

func startSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w}
}

func (e sse) send(event string, data any) {
	b, _ := json.Marshal(data)
	if event != "" {
		fmt.Fprintf(e.w, "event: %s\n", event)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", b)
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) finalText() string {
	switch s.script {
	case NoSignal:
		return NoSignalText
	case Output:
		return OutputText + "\n" + FinalText
	}
	return FinalText
}

// afterPrompt returns the items of a conversation after its last user
// prompt: a user message that is not only tool results (Anthropic carries
// tool results in user messages). A resumed conversation holds the earlier
// turns' tool calls and results before it.
func afterPrompt(v any) []any {
	items, _ := v.([]any)
	last := 0
	for i, it := range items {
		m, _ := it.(map[string]any)
		if m["role"] == "user" && !hasType(m["content"], "tool_result") {
			last = i
		}
	}
	if len(items) == 0 {
		return nil
	}
	return items[last:]
}

// hasType reports whether v holds an object of the given type anywhere.
func hasType(v any, typ string) bool {
	switch v := v.(type) {
	case map[string]any:
		if v["type"] == typ {
			return true
		}
		for _, e := range v {
			if hasType(e, typ) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if hasType(e, typ) {
				return true
			}
		}
	}
	return false
}

// bashTool returns the name of a request's bash tool (Bash, bash), or "".
func bashTool(body map[string]any) string {
	for _, n := range toolNames(body) {
		if strings.EqualFold(n, "bash") {
			return n
		}
	}
	return ""
}

// toolNames lists the names of a request's tools.
func toolNames(body map[string]any) []string {
	var names []string
	tools, _ := body["tools"].([]any)
	for _, t := range tools {
		m, _ := t.(map[string]any)
		name, _ := m["name"].(string)
		if fn, ok := m["function"].(map[string]any); ok && name == "" {
			name, _ = fn["name"].(string)
		}
		if name != "" {
			names = append(names, name)
		}
	}
	return names
}

// openAIError records a request as stage and answers an OpenAI error.
func (s *Server) openAIError(w http.ResponseWriter, r *http.Request, status int, stage, message string) {
	s.record(r, stage)
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": message, "type": "invalid_request_error", "code": "invalid_api_key"}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Anthropic serves the Anthropic Messages API (POST /v1/messages,
// streaming or not) under its URL: Claude Code, and pi and opencode with
// an anthropic/ model.
func Anthropic(t testing.TB, script Script) *Server {
	return newServer(t, script, func(s *Server, w http.ResponseWriter, r *http.Request, body map[string]any) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/v1/messages") {
			s.record(r, "unknown")
			writeJSON(w, http.StatusNotFound, map[string]any{"type": "error", "error": map[string]any{"type": "not_found_error", "message": "not scripted"}})
			return
		}
		if s.script == Unauthorized {
			s.record(r, "401")
			writeJSON(w, http.StatusUnauthorized, map[string]any{"type": "error", "error": map[string]any{"type": "authentication_error", "message": ErrorMessage}})
			return
		}
		shell := bashTool(body)
		var block map[string]any
		stage, stop := "text", "end_turn"
		switch {
		case shell == "":
			// A side call (a title, a summary): plain text.
			stage = "side"
			block = map[string]any{"type": "text", "text": "ok"}
		case hasType(afterPrompt(body["messages"]), "tool_result"):
			stage = "final"
			block = map[string]any{"type": "text", "text": s.finalText()}
		default:
			stage, stop = "tool", "tool_use"
			block = map[string]any{"type": "tool_use", "id": "toolu_e2e_1", "name": shell, "input": map[string]any{"command": CommitCommand}}
		}
		s.record(r, stage)
		model, _ := body["model"].(string)
		usage := map[string]any{"input_tokens": CallInput - CallCached, "cache_read_input_tokens": CallCached, "cache_creation_input_tokens": 0, "output_tokens": CallOutput}
		if stream, _ := body["stream"].(bool); !stream {
			writeJSON(w, http.StatusOK, map[string]any{"id": "msg_e2e", "type": "message", "role": "assistant", "model": model,
				"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
			return
		}
		e := startSSE(w)
		e.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_e2e_" + stage, "type": "message", "role": "assistant", "model": model,
			"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": CallInput - CallCached, "cache_read_input_tokens": CallCached, "cache_creation_input_tokens": 0, "output_tokens": 1}}})
		if block["type"] == "tool_use" {
			input, _ := json.Marshal(block["input"])
			e.send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{}}})
			e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		} else {
			e.send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
			e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": block["text"]}})
		}
		e.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		e.send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": CallOutput}})
		e.send("message_stop", map[string]any{"type": "message_stop"})
	})
}

// OpenAIResponses serves the OpenAI Responses API (POST .../responses,
// streaming) under its URL: Codex.
func OpenAIResponses(t testing.TB, script Script) *Server {
	return newServer(t, script, func(s *Server, w http.ResponseWriter, r *http.Request, body map[string]any) {
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models"):
			s.record(r, "models")
			writeJSON(w, http.StatusOK, map[string]any{"models": []any{}})
			return
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/responses"):
			// Codex tries a websocket first, then falls back to HTTP.
			s.record(r, "websocket")
			http.Error(w, "no websocket", http.StatusNotFound)
			return
		case r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses"):
			s.openAIError(w, r, http.StatusNotFound, "unknown", "not scripted")
			return
		}
		if s.script == Unauthorized {
			s.openAIError(w, r, http.StatusUnauthorized, "401", ErrorMessage)
			return
		}
		var item map[string]any
		stage := "final"
		if in := afterPrompt(body["input"]); hasType(in, "function_call_output") || hasType(in, "custom_tool_call_output") {
			item = map[string]any{"type": "message", "role": "assistant", "id": "msg_e2e", "status": "completed",
				"content": []any{map[string]any{"type": "output_text", "text": s.finalText(), "annotations": []any{}}}}
		} else {
			stage = "tool"
			item = codexToolCall(toolNames(body))
			if item == nil {
				s.t.Errorf("codex offered no known shell tool: %v", toolNames(body))
				stage = "no shell tool"
				item = map[string]any{"type": "message", "role": "assistant", "id": "msg_e2e", "status": "completed",
					"content": []any{map[string]any{"type": "output_text", "text": "no shell tool", "annotations": []any{}}}}
			}
		}
		s.record(r, stage)
		e := startSSE(w)
		e.send("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": "resp_e2e_" + stage}})
		e.send("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
		e.send("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": "resp_e2e_" + stage,
			"usage": map[string]any{"input_tokens": CallInput, "input_tokens_details": map[string]any{"cached_tokens": CallCached},
				"output_tokens": CallOutput, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": CallInput + CallOutput}}})
	})
}

// codexToolCall calls whichever shell tool Codex offers.
func codexToolCall(tools []string) map[string]any {
	for _, n := range tools {
		var args any
		switch n {
		case "shell_command":
			args = map[string]any{"command": CommitCommand}
		case "exec_command":
			args = map[string]any{"cmd": CommitCommand}
		case "shell":
			args = map[string]any{"command": []string{"bash", "-lc", CommitCommand}}
		default:
			continue
		}
		b, _ := json.Marshal(args)
		return map[string]any{"type": "function_call", "id": "fc_e2e", "call_id": "call_e2e_1", "name": n, "arguments": string(b), "status": "completed"}
	}
	return nil
}

// ChatCompletions serves OpenAI-compatible Chat Completions (POST
// .../chat/completions, streaming) under its URL: pi with an
// openai-completions provider (deepseek/ here).
func ChatCompletions(t testing.TB, script Script) *Server {
	return newServer(t, script, func(s *Server, w http.ResponseWriter, r *http.Request, body map[string]any) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			s.openAIError(w, r, http.StatusNotFound, "unknown", "not scripted")
			return
		}
		if s.script == Unauthorized {
			s.openAIError(w, r, http.StatusUnauthorized, "401", ErrorMessage)
			return
		}
		shell := bashTool(body)
		toolResult := false
		for _, m := range afterPrompt(body["messages"]) {
			if m, _ := m.(map[string]any); m["role"] == "tool" {
				toolResult = true
			}
		}
		var delta map[string]any
		stage, finish := "final", "stop"
		switch {
		case shell == "":
			stage = "side"
			delta = map[string]any{"role": "assistant", "content": "ok"}
		case toolResult:
			delta = map[string]any{"role": "assistant", "content": s.finalText()}
		default:
			stage, finish = "tool", "tool_calls"
			args, _ := json.Marshal(map[string]any{"command": CommitCommand})
			delta = map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": "call_e2e_1", "type": "function",
				"function": map[string]any{"name": shell, "arguments": string(args)}}}}
		}
		s.record(r, stage)
		model, _ := body["model"].(string)
		chunk := func(choices []any, usage any) map[string]any {
			c := map[string]any{"id": "chatcmpl-e2e", "object": "chat.completion.chunk", "created": 0, "model": model, "choices": choices}
			if usage != nil {
				c["usage"] = usage
			}
			return c
		}
		e := startSSE(w)
		e.send("", chunk([]any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}, nil))
		e.send("", chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, nil))
		e.send("", chunk([]any{}, map[string]any{"prompt_tokens": CallInput, "completion_tokens": CallOutput, "total_tokens": CallInput + CallOutput,
			"prompt_tokens_details": map[string]any{"cached_tokens": CallCached}}))
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
}
