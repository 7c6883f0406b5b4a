package pluginhost

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/core/internal/redact"
)

// TestPluginStderrIsRedacted: what a plugin writes on stderr, as plain
// lines or as hclog JSON (message and fields), reaches the host's log and
// a start error with the runs' secret values hidden, like every other
// sink.
func TestPluginStderrIsRedacted(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-t0ken-value"
	dir := t.TempDir()
	script := "#!/bin/sh\n" +
		"echo 'plain line with " + secret + "' >&2\n" +
		`echo '{"@level":"error","@message":"json message ` + secret + `","@timestamp":"2026-01-01T00:00:00.000000Z","field":"` + secret + `"}' >&2` + "\n" +
		"exit 1\n"
	if err := os.WriteFile(filepath.Join(dir, BinaryPrefix+"leaky"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h, logs := newHost(t, dir)
	h.Redact(redact.New(map[string]string{"API_TOKEN": secret}))
	_, _, err := h.Sandbox(context.Background(), "leaky")
	if err == nil {
		t.Fatal("a plugin that exits at once started")
	}
	h.Close()
	out := logs.String() + "\n" + err.Error()
	if strings.Contains(out, secret) {
		t.Fatalf("the secret reached the host's output:\n%s", out)
	}
	for _, want := range []string{"plain line with [redacted API_TOKEN]", "json message [redacted API_TOKEN]", "field=\"[redacted API_TOKEN]\""} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
