// Package enginetest holds the run engine's end-to-end tests: core.Run
// with real git in temporary repositories, the local and bubblewrap sandboxes,
// and scripted agents (the command agent and a Go fake) served over the real
// plugin protocol (sdk/plugintest). It has no non-test code.
package enginetest
