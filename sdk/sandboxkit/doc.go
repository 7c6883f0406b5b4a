// Package sandboxkit holds what sandbox provider plugins share, built-in or
// third-party: it depends only on the sdk package. A provider that runs
// commands on this machine (directly or under a wrapper such as bwrap)
// uses it for:
//
//   - confining paths: SandboxPath keeps relative paths (a cwd, a copy
//     target) inside the repository; an Area of host
//     directories checks a cwd (Dir) and copies files and trees in and out
//     (CopyIn, CopyOut) through os.Root, so no symlink, even one swapped in
//     meanwhile, leads outside, and nothing is written through a symlink at
//     the destination; Within is the lexical check; every violation wraps
//     sdk.ErrConfinement;
//   - running commands (Runner): the ExecRequest's argv (Argv), each command
//     in its own process group with its stdin bytes, output streamed as
//     sdk.OutputLine, a timeout or cancellation killing the whole group, and
//     Close killing whatever still runs;
//   - tar streams for providers that copy through an archive API or exec
//     (WriteTar, WriteTarEntry; ExtractTar writes through os.Root, so no
//     entry, nor a symlink the archive made, leads outside the destination);
//   - environment maps (MergeEnv, EnvList, HostEnv);
//   - sandbox directories under the temp dir that `sanddune gc` can list
//     and remove (TempDirs, RemoveAll);
//   - decoding provider blocks with diagnostics (Decoder).
package sandboxkit
