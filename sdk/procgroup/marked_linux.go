package procgroup

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// KillMarked SIGKILLs every process that provably belongs to a command
// tree: it carries entry (NAME=value; give each tree its own random
// value) exactly as an entry of its environment, or descends from one that
// does. It finds what left the tree's process group (setsid, double
// fork), and never kills a process for where it works or whose it is.
// This process and its ancestors are spared. It rescans until none is
// left, twice when a process's environment could not be read (one amid an
// exec shows none), so that a process forking or exec'ing meanwhile is
// caught too.
func KillMarked(entry string) error { return killMarked(entry, 0) }

// KillOwnMarked is KillMarked for a tree this process started: it reads
// the environment only of processes started since this one (an older one
// cannot carry a marker it gave out), which spares reading every
// process's. Leftovers of another process (a dead run's, for gc) need
// KillMarked.
func KillOwnMarked(entry string) error { return killMarked(entry, startTime(os.Getpid())) }

// killMarked is KillMarked over the processes started since the clock
// tick since.
func killMarked(entry string, since uint64) error {
	marker := []byte(entry)
	empty := 0
	for round := 0; ; round++ {
		procs, doubt := readProcs(since)
		pids := marked(procs, marker)
		if len(pids) == 0 {
			// A second look at what was amid an exec.
			if empty++; empty == 2 || !doubt {
				return nil
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		empty = 0
		if round == 50 {
			return errors.New("processes keep appearing: " + joinPIDs(pids))
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(time.Duration(round) * 10 * time.Millisecond)
	}
}

// proc is one live process of the /proc scan.
type proc struct {
	ppid int
	env  []byte // NUL-separated; empty when unreadable or not read
}

// readProcs scans /proc for the live (not zombie) processes, reading the
// environment of those started since the clock tick since. doubt says that one of those had an environment it could
// not read, or an empty one (as amid an exec).
func readProcs(since uint64) (procs map[int]proc, doubt bool) {
	entries, _ := os.ReadDir("/proc")
	procs = make(map[int]proc, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, start, ok := stat(pid)
		if !ok {
			continue
		}
		p := proc{ppid: ppid}
		if start >= since {
			p.env, err = os.ReadFile("/proc/" + e.Name() + "/environ")
			if len(p.env) == 0 && !errors.Is(err, syscall.ESRCH) && !errors.Is(err, os.ErrNotExist) {
				doubt = true
			}
		}
		procs[pid] = p
	}
	return procs, doubt
}

// startTime is when process pid started, in clock ticks since boot; 0
// when unknown.
func startTime(pid int) uint64 {
	_, start, _ := stat(pid)
	return start
}

// marked picks from procs those whose environment has the entry marker,
// and their descendants, leaving out this process and its ancestors.
func marked(procs map[int]proc, marker []byte) []int {
	spared := map[int]bool{}
	for pid := os.Getpid(); pid > 0 && !spared[pid]; pid = procs[pid].ppid {
		spared[pid] = true
	}
	member := map[int]bool{} // memo of the parent-chain walk
	var walk func(pid, depth int) bool
	walk = func(pid, depth int) bool {
		if in, seen := member[pid]; seen {
			return in
		}
		p, ok := procs[pid]
		if !ok || pid <= 1 || spared[pid] || depth > len(procs) {
			return false
		}
		in := hasEntry(p.env, marker) || walk(p.ppid, depth+1)
		member[pid] = in
		return in
	}
	var out []int
	for pid := range procs {
		if walk(pid, 0) {
			out = append(out, pid)
		}
	}
	return out
}

// hasEntry reports whether the NUL-separated env holds exactly entry.
func hasEntry(env, entry []byte) bool {
	for _, kv := range bytes.Split(env, []byte{0}) {
		if bytes.Equal(kv, entry) {
			return true
		}
	}
	return false
}

// stat returns the parent of process pid and when it started (clock
// ticks since boot); ok is false when it is gone or a zombie.
func stat(pid int) (ppid int, start uint64, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The fields after the parenthesised command: state, ppid, ...,
	// starttime (the 22nd field of the line, the 20th of these).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	start, serr := strconv.ParseUint(f[19], 10, 64)
	return ppid, start, err == nil && serr == nil
}

func joinPIDs(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, " ")
}
