package egress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// relayMsg is one message on a relay socket (SOCK_SEQPACKET): from the
// enforcer, a dial request (ID, Network, Addr) or a denial; from the host,
// the answer to a request, the dialled socket attached (SCM_RIGHTS).
type relayMsg struct {
	ID      int     `json:"id,omitempty"`
	Network string  `json:"network,omitempty"`
	Addr    string  `json:"addr,omitempty"`
	Error   string  `json:"error,omitempty"`
	Denial  *Denial `json:"denial,omitempty"`
}

// RelayPair makes a relay socket pair: host is served by ServeRelay, child
// goes to the enforcer (its fd number is wrap's first argument).
func RelayPair() (host *net.UnixConn, child *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	f := os.NewFile(uintptr(fds[0]), "egress-relay")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, err
	}
	return c.(*net.UnixConn), os.NewFile(uintptr(fds[1]), "egress-relay-child"), nil
}

// relayDialTimeout bounds one dial the host makes for the enforcer.
const relayDialTimeout = 30 * time.Second

// ServeRelay dials, in the host's network, what the enforcer at the other
// end of c decided to let through, and passes each refusal to report,
// until the enforcer ends.
func ServeRelay(c *net.UnixConn, report func(Denial)) {
	defer c.Close()
	var wmu sync.Mutex
	buf := make([]byte, 4096)
	for {
		n, _, _, _, err := c.ReadMsgUnix(buf, nil)
		if err != nil || n == 0 {
			return
		}
		var m relayMsg
		if json.Unmarshal(buf[:n], &m) != nil {
			continue
		}
		if m.Denial != nil {
			report(*m.Denial)
			continue
		}
		go func() {
			answer, rights := relayMsg{ID: m.ID}, []byte(nil)
			d := net.Dialer{Timeout: relayDialTimeout}
			conn, err := d.Dial(m.Network, m.Addr)
			if err == nil {
				defer conn.Close()
				var f *os.File
				if f, err = conn.(interface{ File() (*os.File, error) }).File(); err == nil {
					defer f.Close()
					rights = unix.UnixRights(int(f.Fd()))
				}
			}
			if err != nil {
				answer.Error = err.Error()
			}
			b, _ := json.Marshal(answer)
			wmu.Lock()
			defer wmu.Unlock()
			_, _, _ = c.WriteMsgUnix(b, rights, nil)
		}()
	}
}

// remote is the enforcer's end of a relay: its dials and reports.
type remote struct {
	c       *net.UnixConn
	mu      sync.Mutex
	next    int
	waiting map[int]chan relayAnswer
}

type relayAnswer struct {
	conn net.Conn
	err  error
}

func newRemote(c *net.UnixConn) *remote {
	r := &remote{c: c, waiting: map[int]chan relayAnswer{}}
	go r.read()
	return r
}

func (r *remote) send(m relayMsg) error {
	b, _ := json.Marshal(m)
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _, err := r.c.WriteMsgUnix(b, nil, nil)
	return err
}

func (r *remote) report(d Denial) { _ = r.send(relayMsg{Denial: &d}) }

// dial asks the host to dial addr and returns the socket it passes back.
func (r *remote) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	r.mu.Lock()
	r.next++
	id := r.next
	ch := make(chan relayAnswer, 1)
	r.waiting[id] = ch
	r.mu.Unlock()
	if err := r.send(relayMsg{ID: id, Network: network, Addr: addr}); err != nil {
		r.mu.Lock()
		delete(r.waiting, id)
		r.mu.Unlock()
		return nil, err
	}
	select {
	case a := <-ch:
		return a.conn, a.err
	case <-ctx.Done():
		// No longer waited for: an answer already in closes here, a later
		// one in read.
		r.mu.Lock()
		delete(r.waiting, id)
		select {
		case a := <-ch:
			if a.conn != nil {
				a.conn.Close()
			}
		default:
		}
		r.mu.Unlock()
		return nil, ctx.Err()
	}
}

func (r *remote) read() {
	buf, oob := make([]byte, 4096), make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := r.c.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			return
		}
		var m relayMsg
		if json.Unmarshal(buf[:n], &m) != nil {
			continue
		}
		a := relayAnswer{err: errors.New(m.Error)}
		if m.Error == "" {
			a = relayAnswer{err: fmt.Errorf("no socket in the relay's answer")}
			if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) == 1 {
				if fds, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(fds) == 1 {
					f := os.NewFile(uintptr(fds[0]), "relayed")
					a.conn, a.err = net.FileConn(f)
					f.Close()
				}
			}
		}
		r.mu.Lock() // held while answering, so that dial giving up sees the answer or none comes
		if ch := r.waiting[m.ID]; ch != nil {
			delete(r.waiting, m.ID)
			ch <- a // buffered
		} else if a.conn != nil {
			a.conn.Close()
		}
		r.mu.Unlock()
	}
}
