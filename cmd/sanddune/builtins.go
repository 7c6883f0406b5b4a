package main

// builtins are the plugins that come with sanddune. Each is a binary of its
// own, sanddune-plugin-<name>, installed beside sanddune (cmd/sanddune-plugin-*,
// ADR 0019): a plugin process then loads only its own provider, not the
// whole CLI and every other provider.
var builtins = []string{
	"bubblewrap", "claude", "codex", "command", "copilot", "cursor", "docker", "gemini", "kubernetes",
	"local", "opencode", "pi", "podman", "vercel",
}
