package containerkittest

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// HoldCreates starts a proxy to the Docker Engine API socket (DOCKER_HOST,
// else /var/run/docker.sock) that forwards every request but holds the
// daemon's answer to a container create: it closes created once the
// daemon has made the first container, and passes the answer on only once
// release is closed (nil: never), or drops it when the client gave up. It
// returns the proxy's DOCKER_HOST. It makes a daemon that answers late.
func HoldCreates(t testing.TB, created, release chan struct{}) string {
	t.Helper()
	var once sync.Once
	return proxyDaemon(t, nil, func(resp *http.Response) error {
		if !strings.HasSuffix(resp.Request.URL.Path, "/containers/create") {
			return nil
		}
		once.Do(func() { close(created) })
		select {
		case <-release:
		case <-resp.Request.Context().Done():
		}
		return nil
	})
}

// BeforeRequests starts a proxy to the Docker Engine API socket that calls
// before with each request before forwarding it (an exec's attach included),
// and returns its DOCKER_HOST. It makes something happen at an exact step
// of a client's conversation with the daemon.
func BeforeRequests(t testing.TB, before func(*http.Request)) string {
	t.Helper()
	return proxyDaemon(t, before, nil)
}

// proxyDaemon serves a reverse proxy to the daemon's socket on a new socket
// and returns its DOCKER_HOST; before and modify (either may be nil) see
// each request and each answer.
func proxyDaemon(t testing.TB, before func(*http.Request), modify func(*http.Response) error) string {
	t.Helper()
	daemon := "unix:///var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		daemon = h
	}
	sock, ok := strings.CutPrefix(daemon, "unix://")
	if !ok {
		t.Skipf("DOCKER_HOST %s is not a unix socket: no proxy", daemon)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			if before != nil {
				before(r.In)
			}
			r.SetURL(&url.URL{Scheme: "http", Host: "docker"})
		},
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		}},
		ModifyResponse: modify,
	}
	path := filepath.Join(t.TempDir(), "docker.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: proxy}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "unix://" + path
}
