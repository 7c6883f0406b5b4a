package containerkit

// ExecMarker is the environment variable set on every exec; its value
// identifies the exec so that cancellation can find and kill every process
// it started, however deep, inside the container.
const ExecMarker = "SANDDUNE_EXEC"

// NewMarker returns a fresh ExecMarker=<id> environment entry.
func NewMarker() string { return ExecMarker + "=" + RandomHex(8) }

// KillArgv is the command that SIGKILLs every process whose environment
// carries marker (and its process group), repeating until none is left.
// Run it as the exec's user: reading /proc/PID/environ of other users needs
// CAP_SYS_PTRACE, which containers lack.
func KillArgv(marker string) []string { return []string{"sh", "-c", killScript, "sh", marker} }

const killScript = `m="$1"
for round in 1 2 3 4 5 6 7 8 9 10; do
  found=
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = "$$" ] && continue
    if tr '\0' '\n' <"$d/environ" 2>/dev/null | grep -qxF "$m"; then
      kill -KILL -- "-$p" 2>/dev/null
      kill -KILL "$p" 2>/dev/null && found=1
    fi
  done
  [ -z "$found" ] && exit 0
done`
