// Package pluginhost finds, launches and talks to sanddune plugins.
//
// Every provider — built in or third party — runs out of process and speaks
// the sdk's gRPC protocol over HashiCorp go-plugin. A provider type label
// (the "docker" in `sandbox "docker" "x" {}`) resolves to a plugin source:
//
//  1. the binary the config's required_plugins names by source;
//  2. otherwise a built-in: the binary Options.Builtins maps its name to,
//     installed beside the sanddune executable with it, or the executable
//     itself started under that binary's name (Options.Self, docs/adr/0030);
//     the built-ins one binary serves share one process of it (docs/adr/0022);
//  3. otherwise an external binary named sanddune-plugin-<name>, searched
//     in the directories of SANDDUNE_PLUGIN_PATH, then <repo>/.sanddune/plugins,
//     then $XDG_DATA_HOME/sanddune/plugins (~/.local/share/...), then the
//     directory holding the sanddune executable.
//
// A binary named like a built-in is ignored (with a warning) unless
// required_plugins asks for it by source. A binary that comes with the
// repository or the config runs only once its SHA-256 is in the user's
// trust store (TrustStore, written by LockRepo), and every external binary
// is checked against its lock file entry (Lock) through go-plugin's
// SecureConfig before it starts. Built-ins are part of sanddune: trusted
// with it, never locked (docs/adr/0009).
//
// A binary may serve several components: a label "acme-vm" is looked up as
// sanddune-plugin-acme-vm, then sanddune-plugin-acme.
//
// The Host launches each binary once and shares the process between all
// runs and all the components it serves; one that died is launched again on the next Resolve (a run whose
// sandbox plugin died cleans up through it, ADR 0016). Plugin processes
// get their own process group (so a terminal's Ctrl-C reaches sanddune
// first, which then cancels runs cleanly) and a parent-death signal, and
// Close kills them all; Stopped names the sandbox plugins it had to kill
// before they had shut down.
package pluginhost
