// Package sandboxkit holds what sandbox provider plugins share, built-in or
// third-party: it depends only on the sdk package. A provider that runs
// commands on this machine (directly or under a wrapper such as bwrap)
// uses it for:
//
//   - confining paths to a set of root directories, symlink-safe: Resolve
//     for paths that must exist (a cwd, a CopyOut source), ResolveTarget for
//     paths a copy writes to (a CopyIn target), Within for lexical checks;
//     every violation wraps ErrConfinement;
//   - copying files and trees in and out (Copy) without ever following or
//     writing through a symlink at the destination;
//   - running commands (Runner): the ExecRequest's argv (Argv), each command
//     in its own process group with its stdin bytes, output streamed as
//     sdk.OutputLine, a timeout or cancellation killing the whole group, and
//     Close killing whatever still runs;
//   - tar streams for providers that copy through an archive API or exec
//     (WriteTar, WriteTarEntry; ExtractTar refuses entries escaping the
//     destination or writing through a symlink);
//   - environment maps (MergeEnv, EnvList, HostEnv);
//   - sandbox directories under the temp dir that `sanddune gc` can list
//     and remove (TempDirs, RemoveAll);
//   - decoding provider blocks with diagnostics (Decoder), including the
//     usual `mount` blocks (MountBlock) and their host paths
//     (ResolveHostPath).
//
// Package kittest holds the matching test helpers.
package sandboxkit
