// Package containerkit holds what container-engine sandbox providers share
// (docker, podman, and third-party engines alike), all but the engine's own
// calls: the provider methods every engine has alike (Base: Info,
// ConfigSchema, Describe, Configure), the provider block's shared attributes (image, env, network,
// limits, devices, selinux_label, mount blocks; Engine.Schema) and their
// decoding (Decode); the container a run asks for (NewSpec: name, image,
// env, binds, user) and its agent home (Spec.PrepareHome, nothing where
// the image has it: Homes); the sandbox's
// engine-independent half (Container: Info, closing once, confinement,
// exec checks, copies in and out planned here and moved by the engine's
// Archiver); the bind-mount layout (the worktree at /home/agent/workspace,
// git metadata at its host paths), device specs, SELinux relabel options,
// network lists, and killing every process of one exec by its environment
// marker. Tar archives come from sandboxkit. It depends only on the sdk
// packages; containerkittest holds the tests every engine runs against
// its real engine.
package containerkit
