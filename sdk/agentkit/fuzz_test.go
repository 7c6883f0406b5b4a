package agentkit

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzRewriteJSONLCwd: any session file and any paths rewrite without a
// crash, keep every line (count and order), leave lines that are not JSON
// objects as they are, and keep JSON lines valid JSON.
func FuzzRewriteJSONLCwd(f *testing.F) {
	f.Add([]byte(`{"cwd":"/a/b","x":1}`+"\n"+`{"payload":{"cwd":"/a/b/c"}}`+"\n"+"torn {\n"), "/a/b", "/w")
	f.Add([]byte(`{"m":{"cwd":["/a","/a/x",3]}}`), "/a", "/b/")
	f.Add([]byte(`{"cwd":"\/a\u002fb"}`), "/", "/root")
	f.Add([]byte(`[{"cwd":"/a"}]`+"\n"+`{"cwd":"/a"`), "/a", "")
	f.Fuzz(func(t *testing.T, data []byte, from, to string) {
		out := rewriteJSONLCwd(data, from, to, "cwd", "payload.cwd", "**.cwd")
		in, got := bytes.Split(data, []byte{'\n'}), bytes.Split(out, []byte{'\n'})
		if len(in) != len(got) {
			t.Fatalf("%d lines became %d", len(in), len(got))
		}
		for i, l := range in {
			trimmed := bytes.TrimSpace(l)
			notObject := len(trimmed) == 0 || trimmed[0] != '{'
			if notObject && !bytes.Equal(l, got[i]) || json.Valid(l) && !json.Valid(got[i]) {
				t.Fatalf("line %d %q became %q", i+1, l, got[i])
			}
		}
	})
}
