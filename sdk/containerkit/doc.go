// Package containerkit holds what container-engine sandbox providers share
// (docker, podman, and third-party engines alike): the provider block's
// shared attributes (image, env, network, limits, devices, selinux_label,
// mount blocks; Engine.Schema) and their decoding (Decode), the bind-mount layout
// (the worktree at /home/agent/workspace, git metadata at its host paths),
// the bind list a CreateRequest asks for, confinement of sandbox paths,
// the directories of the agent home the container user must own, the
// default image name, device specs, SELinux relabel options, network
// lists, killing every process of one exec by its environment marker, and
// the archive that creates the agent home's directories (copies in and out
// use sandboxkit's tar helpers). It depends only on the sdk packages.
package containerkit
