// Package enginetest holds the run engine's end-to-end tests: core.Run
// (PlanRun + Execute) with real git in temporary repositories, the local and bubblewrap sandboxes,
// and scripted agents (the command agent and a Go fake) served over the real
// plugin protocol (sdk/plugintest), and core/gc's salvage of sandboxes that
// runs of a killed sanddune left behind. It has no non-test code.
package enginetest
