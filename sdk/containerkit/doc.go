// Package containerkit holds what container-engine sandbox providers share
// (docker, podman, and third-party engines alike): the bind-mount layout
// (the worktree at /home/agent/workspace, git metadata at its host paths),
// the bind list a CreateRequest asks for, confinement of sandbox paths,
// the directories of the agent home the container user must own, the
// default image name, device specs, SELinux relabel options, network
// lists, killing every process of one exec by its environment marker, and
// tar archives in and out of a container that never escape their
// destination. It depends only on the sdk packages.
package containerkit
