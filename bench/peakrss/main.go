// Command peakrss runs a command and reports the peak resident set size
// (VmHWM) of it and of every process it starts, and the largest proportional
// set size (Pss: shared pages such as the binary's text divided among the
// processes that map them) seen while polling, read from /proc (Linux).
//
//	peakrss [-match PREFIX] [-every 10ms] -- CMD ARGS...
//
// It polls the process tree, remembers each process's last VmHWM (the kernel
// keeps the peak, so a sample taken shortly before exit is the peak), and on
// exit prints one line per process whose executable's path starts with
// -match (default: CMD itself; DIR/sanddune also counts the plugin binaries
// DIR/sanddune-plugin-* beside it), as "pid hwm-KiB pss-KiB anon-KiB
// file-KiB argv" (anon and file: the largest PSS sample's anonymous and
// file-backed parts), then "total N" and the sums of those, and last the
// largest PSS sum of one sample (processes sharing a binary's pages count
// them once there, while each one's largest PSS may come from a moment the
// other did not yet map them). Processes that exit between two polls are
// missed; the bench runs short-lived git and docker CLIs it does not count,
// and sanddune's own processes live for the whole run.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

type proc struct {
	argv string
	exe  string
	hwm  int64 // KiB
	pss  int64 // KiB, largest sample
	anon int64 // KiB, Pss_Anon of the largest sample
	file int64 // KiB, Pss_File of the largest sample
}

func main() {
	match := flag.String("match", "", "count only processes whose executable's path starts with this (default: the command)")
	every := flag.Duration("every", 10*time.Millisecond, "poll interval")
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: peakrss [-match PREFIX] [-every D] -- CMD ARGS...")
		os.Exit(2)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "peakrss:", err)
		os.Exit(1)
	}
	want := *match
	if want == "" {
		want, _ = exec.LookPath(args[0])
	}
	want, _ = filepath.Abs(want)
	seen := map[int]*proc{}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(*every)
	defer tick.Stop()
	var werr error
	var together int64 // KiB, the largest PSS sum of one sample
loop:
	for {
		together = max(together, sample(cmd.Process.Pid, seen, want))
		select {
		case werr = <-done:
			break loop
		case <-tick.C:
		}
	}
	pids := make([]int, 0, len(seen))
	for pid, p := range seen {
		if strings.HasPrefix(p.exe, want) {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	var t proc
	for _, pid := range pids {
		p := seen[pid]
		t.hwm, t.pss, t.anon, t.file = t.hwm+p.hwm, t.pss+p.pss, t.anon+p.anon, t.file+p.file
		fmt.Fprintf(os.Stderr, "peakrss %d %d %d %d %d %s\n", pid, p.hwm, p.pss, p.anon, p.file, p.argv)
	}
	fmt.Fprintf(os.Stderr, "peakrss total %d %d %d %d %d %d\n", len(pids), t.hwm, t.pss, t.anon, t.file, together)
	if werr != nil {
		if ee, ok := werr.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		os.Exit(1)
	}
}

// sample records VmHWM and PSS for root and all its live descendants, and
// returns the PSS sum of those whose executable starts with want.
func sample(root int, seen map[int]*proc, want string) int64 {
	var sum int64
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parens.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		parent[pid] = ppid
	}
	for pid := range parent {
		if !descends(pid, root, parent) {
			continue
		}
		hwm := fields(pid, "status")["VmHWM:"]
		if hwm == 0 {
			continue
		}
		p := seen[pid]
		if p == nil {
			p = identify(pid)
			if pp := identify(parent[pid]); p.exe == pp.exe && p.argv == pp.argv {
				// Forked and not yet exec'd (os/exec starting git or docker):
				// it shares its parent's memory, so its VmHWM is the parent's.
				continue
			}
			seen[pid] = p
		}
		p.hwm = max(p.hwm, hwm)
		r := fields(pid, "smaps_rollup")
		if r["Pss:"] > p.pss {
			p.pss, p.anon, p.file = r["Pss:"], r["Pss_Anon:"], r["Pss_File:"]
		}
		if strings.HasPrefix(p.exe, want) {
			sum += r["Pss:"]
		}
	}
	return sum
}

func identify(pid int) *proc {
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return &proc{exe: exe, argv: strings.TrimSpace(strings.ReplaceAll(string(cl), "\x00", " "))}
}

func descends(pid, root int, parent map[int]int) bool {
	for i := 0; i < 64 && pid > 1; i++ {
		if pid == root {
			return true
		}
		pid = parent[pid]
	}
	return false
}

// fields reads the "Name: N kB" lines of /proc/PID/FILE, keyed by "Name:".
func fields(pid int, file string) map[string]int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, file))
	if err != nil {
		return nil
	}
	m := map[string]int64{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			if n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
				m[k+":"] = n
			}
		}
	}
	return m
}
