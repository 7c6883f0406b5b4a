package main

import "github.com/missingstudio/sanddune/core/pluginhost"

// builtinsBinary serves every built-in but kubernetes
// (cmd/sanddune-plugin-builtins): one process of it, started on first use,
// serves them all (ADR 0022).
const builtinsBinary = pluginhost.BinaryPrefix + "builtins"

// builtins are the plugins that come with sanddune, each mapped to the
// binary, installed beside sanddune, that serves it.
var builtins = map[string]string{
	"bubblewrap": builtinsBinary,
	"claude":     builtinsBinary,
	"codex":      builtinsBinary,
	"command":    builtinsBinary,
	"copilot":    builtinsBinary,
	"cursor":     builtinsBinary,
	"docker":     builtinsBinary,
	"gemini":     builtinsBinary,
	"local":      builtinsBinary,
	"opencode":   builtinsBinary,
	"pi":         builtinsBinary,
	"podman":     builtinsBinary,
	"vercel":     builtinsBinary,
	// client-go makes it twice the size of all the others together: its own binary
	// (cmd/sanddune-plugin-kubernetes) keeps it out of every other run.
	"kubernetes": pluginhost.BinaryPrefix + "kubernetes",
}
