package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/missingstudio/sanddune/core/gc"
	"github.com/missingstudio/sanddune/core/pluginhost"
	"github.com/missingstudio/sanddune/sdk"
)

// stopTimeout bounds the cleanup through plugins that had to be killed.
const stopTimeout = 2 * time.Minute

// stopPlugins stops the plugins once the runs have ended. A sandbox plugin
// killed before it had shut down (say, a container create the daemon
// answered only after Ctrl-C and the plugin's 2 s of grace) may have left
// a resource of a run: it is started again and the resources of this
// process's runs are collected through it, said on stderr (ADR 0016).
func stopPlugins(ctx context.Context, host *pluginhost.Host, stderr io.Writer) {
	host.Close()
	stopped := host.Stopped()
	if len(stopped) == 0 {
		return
	}
	defer host.Close()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
	defer cancel()
	for _, name := range stopped {
		prov, _, err := host.Sandbox(ctx, name)
		var sbs []gc.Sandbox
		if err == nil {
			sbs, err = gc.Sandboxes(ctx, name, prov, sdk.Config{}, gc.Options{Mine: true})
		}
		if err != nil {
			fmt.Fprintf(stderr, "sanddune: the %s plugin was killed before it had shut down, and starting it again to remove what it may have left failed: %v; run `sanddune gc`\n", name, err)
		}
		for _, s := range sbs {
			if s.Action == gc.Removed {
				fmt.Fprintf(stderr, "sanddune: removed sandbox %s of run %s (%s): its plugin was killed before it had shut down\n", s.Resource.ID, s.Run(), name)
			} else {
				fmt.Fprintf(stderr, "sanddune: sandbox %s of run %s (%s) is left: %s; run `sanddune gc`\n", s.Resource.ID, s.Run(), name, s.Reason)
			}
		}
	}
}
