//go:build !linux

package egress

import (
	"errors"
	"net"
	"os"
)

// RelayPair makes a relay socket pair; the relay needs Linux.
func RelayPair() (*net.UnixConn, *os.File, error) {
	return nil, nil, errors.New("egress enforcement needs Linux")
}

// ServeRelay serves a relay; the relay needs Linux.
func ServeRelay(*net.UnixConn, func(Denial)) {}
