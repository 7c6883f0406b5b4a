package host

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/missingstudio/sanddune/sdk/internal/pluginpb"
	"github.com/missingstudio/sanddune/sdk/internal/wire"
)

// asked holds what the host asks a plugin process once, shared by the
// connections of one client: the catalog (which does not change while
// the process runs) and each preflight that passed, per component,
// config, repository and user (a 20-run for_each of one block asks
// once). A failed preflight is asked again by the next run; runs asking
// at the same time share one call.
type asked struct {
	mu         sync.Mutex
	catalogRes *pluginpb.CatalogResponse
	preflights map[string]*preflightCall
}

type preflightCall struct {
	done chan struct{}
	err  error
}

// catalog is the plugin's catalog, asked on first use.
func (c *conn) catalog(ctx context.Context) (*pluginpb.CatalogResponse, error) {
	a := c.asked
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.catalogRes == nil {
		resp, err := c.provider.Catalog(ctx, &pluginpb.CatalogRequest{}, wire.CallOpts...)
		if err != nil {
			return nil, c.fromStatus(ctx, "Catalog", err)
		}
		a.catalogRes = resp
	}
	return a.catalogRes, nil
}

// preflight returns the outcome of ask for req: nil at once when one
// passed before, else that of the call in progress for the same request,
// else ask's.
func (a *asked) preflight(ctx context.Context, req *pluginpb.PreflightRequest, ask func() error) error {
	key := strings.Join([]string{req.Component, string(req.Config.GetTypeJson()), string(req.Config.GetMsgpack()), req.HostRepoPath,
		strconv.FormatInt(req.HostUid, 10), strconv.FormatInt(req.HostGid, 10)}, "\x00")
	for {
		a.mu.Lock()
		if a.preflights == nil {
			a.preflights = map[string]*preflightCall{}
		}
		call, ok := a.preflights[key]
		if !ok {
			call = &preflightCall{done: make(chan struct{})}
			a.preflights[key] = call
			a.mu.Unlock()
			call.err = ask()
			if call.err != nil {
				a.mu.Lock()
				delete(a.preflights, key)
				a.mu.Unlock()
			}
			close(call.done)
			return call.err
		}
		a.mu.Unlock()
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-call.done:
		}
		// The asker's cancellation is not this caller's: ask again.
		if call.err == nil || !errors.Is(call.err, context.Canceled) && !errors.Is(call.err, context.DeadlineExceeded) {
			return call.err
		}
	}
}
