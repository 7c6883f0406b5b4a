package egress

import (
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// BinaryName is the enforcer's executable, installed beside the plugins.
const BinaryName = "sanddune-egress"

// MountPath is where a sandbox container finds the enforcer (bind-mounted
// read-only from the host).
const MountPath = "/.sanddune-egress"

// Mark is the firewall mark of the enforcer's own sockets: the only
// traffic the rules let out untouched. Setting it (SO_MARK) needs
// CAP_NET_ADMIN or, since Linux 5.17, CAP_NET_RAW: a sandbox with an
// enforcer must hold neither.
const Mark = 0x5dd0e

// Binary finds the enforcer beside the running executable, else on PATH,
// and checks that it is a static Linux binary (it runs in the sandbox's
// image, whatever its C library).
func Binary() (string, error) {
	var path string
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), BinaryName); isFile(p) {
			path = p
		}
	}
	if path == "" {
		p, err := exec.LookPath(BinaryName)
		if err != nil {
			return "", fmt.Errorf("egress needs the %s enforcer beside the plugin or on PATH: %s", BinaryName, installHint)
		}
		path = p
	}
	if err := checkStatic(path); err != nil {
		return "", fmt.Errorf("egress enforcer %s: %w: %s", path, err, installHint)
	}
	return path, nil
}

// installHint says how to install the enforcer static, from a checkout or
// not.
const installHint = "install it static with `make install` in a checkout, or `CGO_ENABLED=0 go install github.com/missingstudio/sanddune/cmd/" + BinaryName + "@<version>`"

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("not a Linux executable: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("it is dynamically linked, so it cannot run in every image")
		}
	}
	return nil
}

// policyJSON is the enforcer's argument (PolicyArg, parseArg).
type policyJSON struct {
	Allow []string          `json:"allow"`
	Hosts map[string]string `json:"hosts,omitempty"`
}

// PolicyArg is the enforcer's argument for a policy's entries.
func PolicyArg(allow []string, hosts map[string]string) string {
	b, _ := json.Marshal(policyJSON{allow, hosts})
	return string(b)
}

// Monitor collects an enforcer's refusals for WatchEgress (those from
// before Watch too) and says when the enforcer is in place.
type Monitor struct {
	ready, done chan struct{}
	wake        chan struct{}
	err         error // set before done is closed
	readyOnce   sync.Once
	endOnce     sync.Once

	mu      sync.Mutex
	pending []Denial
}

// NewMonitor returns a Monitor fed through Report and ended by End.
func NewMonitor() *Monitor {
	return &Monitor{ready: make(chan struct{}), done: make(chan struct{}), wake: make(chan struct{}, 1)}
}

// Follow reads an enforcer's output r, from its start, until it ends.
func Follow(r io.Reader) *Monitor {
	m := NewMonitor()
	go func() {
		m.End(ReadEvents(r, func() { m.readyOnce.Do(func() { close(m.ready) }) }, m.Report))
	}()
	return m
}

// Report queues a refusal for Watch.
func (m *Monitor) Report(d Denial) {
	m.mu.Lock()
	m.pending = append(m.pending, d)
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// End ends the refusals (the enforcer ended, with err before it was
// ready); Watch returns once it passed the last on. Later calls do nothing.
func (m *Monitor) End(err error) {
	m.endOnce.Do(func() {
		m.err = err
		close(m.done)
	})
}

// Ready waits until the enforcer's rules are in place; it fails when the
// enforcer ended first.
func (m *Monitor) Ready(ctx context.Context) error {
	select {
	case <-m.ready:
		return nil
	case <-m.done:
		select {
		case <-m.ready:
			return nil
		default:
			return m.err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Watch calls report for every denial, in order, until ctx ends or the
// enforcer's output does (the sandbox was removed).
func (m *Monitor) Watch(ctx context.Context, report func(Denial)) error {
	for {
		m.mu.Lock()
		batch := m.pending
		m.pending = nil
		m.mu.Unlock()
		for _, d := range batch {
			report(d)
		}
		select {
		case <-m.wake:
		case <-m.done:
			if len(m.wake) > 0 || m.hasPending() {
				continue
			}
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

func (m *Monitor) hasPending() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pending) > 0
}
