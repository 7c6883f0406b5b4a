// Package vercel is the built-in "vercel" sandbox provider: an isolated
// sandbox that is a Vercel Sandbox microVM, driven over Vercel's HTTP API
// (there is no Go SDK; client.go and api.go are a small typed client).
//
// Create makes a non-persistent named sandbox (nothing survives its stop),
// tagged with the run and its owner's host and pid, writes the run's
// labels to a file in it and makes the empty repository directory; the
// core then syncs the code in and out with git bundles through Exec,
// CopyIn and CopyOut. Exec runs a detached command and follows its NDJSON
// log stream; the API has no stdin, so stdin bytes go to a file in the
// sandbox that the command reads instead. A timeout, a cancellation or
// Close kills the remote command. Close stops and deletes the sandbox.
// For `sanddune gc`, ListResources lists sandboxes by name prefix and
// labels, Recover reattaches to a live one and RemoveResource deletes one.
//
// The sandbox is a VM of its own: the agent runs there with Vercel's
// network policy, nothing of this machine is reachable from it.
package vercel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/missingstudio/sanddune/sdk"
)

// Version is the provider's version.
const Version = "0.1.0"

const (
	// namePrefix starts the name of every sandbox the provider creates.
	namePrefix = "sanddune-"
	// labelsFile, in the session's working directory, holds the run's
	// labels (tags carry only the few gc needs to judge a sandbox
	// orphaned: Vercel allows 5).
	labelsFile = "sanddune-labels.json"
	// repoDir, in the session's working directory, is RepoPath.
	repoDir = "repo"
)

// tagLabels are the labels also kept as sandbox tags.
var tagLabels = []string{sdk.LabelRun, sdk.LabelHost, sdk.LabelPID}

// Provider is the vercel sandbox provider. It implements
// sdk.ResourceLister and sdk.SandboxRecoverer.
type Provider struct {
	getenv func(string) string
	log    hclog.Logger
	// timeout, when set, replaces callTimeout (tests shorten it).
	timeout time.Duration
}

var (
	_ sdk.SandboxProvider  = (*Provider)(nil)
	_ sdk.ResourceLister   = (*Provider)(nil)
	_ sdk.SandboxRecoverer = (*Provider)(nil)
)

// New returns the vercel sandbox provider, reading credentials from the
// process environment.
func New() sdk.SandboxProvider {
	return &Provider{getenv: os.Getenv, log: sdk.DefaultLogger().Named("vercel")}
}

// Info describes the provider.
func (*Provider) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{
		Version:     Version,
		Description: "Vercel Sandbox microVM over Vercel's API (VERCEL_TOKEN + VERCEL_TEAM_ID + VERCEL_PROJECT_ID, or VERCEL_OIDC_TOKEN)",
		Sandbox:     &sdk.SandboxCapabilities{Contract: sdk.ContractIsolated, NetworkNone: true, Sudo: true, Confines: true},
	}, nil
}

// Describe returns the block's env (the sandbox-provider env layer).
func (*Provider) Describe(_ context.Context, cfg sdk.Config) (sdk.SandboxDescription, error) {
	c, diags := decodeConfig(cfg)
	return sdk.SandboxDescription{Env: c.Env}, diags.Err()
}

// ConfigSchema declares the provider block.
func (*Provider) ConfigSchema(context.Context) (sdk.Schema, error) { return schema(), nil }

// Configure validates a provider block.
func (*Provider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	_, diags := decodeConfig(cfg)
	return diags, nil
}

// setup decodes the config and builds a client from the credentials. The
// API base URL is base_url, else $SANDDUNE_VERCEL_BASE_URL (which `sanddune
// gc`, having no config, uses too), else DefaultBaseURL.
func (p *Provider) setup(cfg sdk.Config) (config, *client, credentials, error) {
	c, diags := decodeConfig(cfg)
	if err := diags.Err(); err != nil {
		return c, nil, credentials{}, fmt.Errorf("vercel sandbox: %w", err)
	}
	cred, err := loadCredentials(p.getenv, c)
	if err != nil {
		return c, nil, cred, fmt.Errorf("vercel sandbox: %w", err)
	}
	base := c.BaseURL
	if base == "" {
		base = p.getenv(envBaseURL)
	}
	cl := newClient(base, cred, p.log)
	if p.timeout > 0 {
		cl.timeout = p.timeout
	}
	return c, cl, cred, nil
}

// Preflight checks the credentials and that the API accepts them for the
// project (one list call).
func (p *Provider) Preflight(ctx context.Context, req sdk.PreflightRequest) error {
	_, cl, cred, err := p.setup(req.Config)
	if err != nil {
		return err
	}
	if _, _, err := cl.list(ctx, cred.projectID, namePrefix, ""); err != nil {
		return fmt.Errorf("vercel sandbox: the API refused the credentials for project %s (team %q): %w", cred.projectID, cred.teamID, err)
	}
	return nil
}

// Create makes a sandbox for one run.
func (p *Provider) Create(ctx context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	cfg, cl, cred, err := p.setup(req.Config)
	if err != nil {
		return nil, err
	}
	body := createBody{
		ProjectID:     cred.projectID,
		Name:          sandboxName(req.RunID),
		Runtime:       cfg.Runtime,
		Ports:         cfg.Ports,
		Timeout:       cfg.Timeout.Milliseconds(),
		Persistent:    false,
		NetworkPolicy: cfg.NetworkPolicy,
		Tags:          map[string]string{},
	}
	if body.Ports == nil {
		body.Ports = []int{}
	}
	if cfg.Vcpus > 0 {
		body.Resources = &resources{Vcpus: cfg.Vcpus}
	}
	for _, k := range tagLabels {
		if v := req.Labels[k]; v != "" {
			body.Tags[k] = v
		}
	}
	created, err := cl.create(ctx, body)
	if err != nil {
		return nil, fmt.Errorf("vercel sandbox: creating sandbox %s: %w", body.Name, err)
	}
	s := newSandbox(cl, cred.projectID, created.Sandbox.Name, created.Session, req.Env)
	if err := s.prepare(ctx, req.Labels); err != nil {
		rmErr := cl.remove(context.WithoutCancel(ctx), s.name, s.projectID)
		if rmErr != nil {
			return nil, fmt.Errorf("vercel sandbox %s: %w; deleting it failed too (%v): delete it in the Vercel dashboard or with `sanddune gc --force`", s.name, err, rmErr)
		}
		return nil, fmt.Errorf("vercel sandbox %s: %w", s.name, err)
	}
	return s, nil
}

// ListResources lists the sandboxes this provider created in the block's
// project at the block's API (base_url, team_id, project_id and the
// credentials in the environment), with their labels (from the labels
// file while the sandbox runs, else from its tags). With the defaults and
// no usable credentials there is nothing to list: every `sanddune gc`
// asks every sandbox plugin, and most users of it have no Vercel account.
// A configured block without them is an error.
func (p *Provider) ListResources(ctx context.Context, cfg sdk.Config) ([]sdk.Resource, error) {
	_, cl, cred, err := p.setup(cfg)
	if err != nil && cfg.IsNull() {
		p.log.Debug("not listing Vercel sandboxes", "reason", err.Error())
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []sdk.Resource
	cursor := ""
	for {
		page, next, err := cl.list(ctx, cred.projectID, namePrefix, cursor)
		if err != nil {
			return out, fmt.Errorf("vercel sandbox: listing sandboxes: %w", err)
		}
		for _, sb := range page {
			if sb.Tags[sdk.LabelRun] == "" {
				continue
			}
			labels := map[string]string{}
			for k, v := range sb.Tags {
				labels[k] = v
			}
			if sb.Status == "running" {
				if got, err := readLabels(ctx, cl, cred.projectID, sb.Name); err == nil {
					for k, v := range got {
						labels[k] = v
					}
				}
			}
			out = append(out, sdk.Resource{ID: sb.Name, Labels: labels})
		}
		if next == "" || next == cursor {
			return out, nil
		}
		cursor = next
	}
}

// readLabels reads a running sandbox's labels file.
func readLabels(ctx context.Context, cl *client, projectID, name string) (map[string]string, error) {
	got, err := cl.get(ctx, name, projectID)
	if err != nil {
		return nil, err
	}
	rc, err := cl.readFile(ctx, got.Session.ID, path.Join(got.Session.Cwd, labelsFile))
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var labels map[string]string
	if err := json.NewDecoder(io.LimitReader(rc, 1<<20)).Decode(&labels); err != nil {
		return nil, err
	}
	return labels, nil
}

// RemoveResource deletes a sandbox listed by ListResources.
func (p *Provider) RemoveResource(ctx context.Context, cfg sdk.Config, id string) error {
	_, cl, cred, err := p.setup(cfg)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(id, namePrefix) {
		return fmt.Errorf("vercel sandbox: %q is not a sandbox sanddune created", id)
	}
	if err := cl.remove(ctx, id, cred.projectID); err != nil {
		return fmt.Errorf("vercel sandbox: deleting %s: %w", id, err)
	}
	return nil
}

// Recover reattaches to a running sandbox listed by ListResources, with
// the base environment only. Closing it leaves the sandbox.
func (p *Provider) Recover(ctx context.Context, cfg sdk.Config, id string) (sdk.Sandbox, error) {
	_, cl, cred, err := p.setup(cfg)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(id, namePrefix) {
		return nil, fmt.Errorf("vercel sandbox: %q is not a sandbox sanddune created", id)
	}
	got, err := cl.get(ctx, id, cred.projectID)
	if err != nil {
		return nil, fmt.Errorf("vercel sandbox: %s: %w", id, err)
	}
	if got.Session.Status != "running" {
		return nil, fmt.Errorf("vercel sandbox: %s is %s: a non-persistent sandbox loses its files when it stops, so nothing is left to salvage", id, got.Session.Status)
	}
	s := newSandbox(cl, cred.projectID, id, got.Session, nil)
	s.recovered = true
	if err := s.findHome(ctx); err != nil {
		return nil, fmt.Errorf("vercel sandbox %s: %w", id, err)
	}
	return s, nil
}

// sandboxName is namePrefix, the run id made safe, and a random suffix.
func sandboxName(runID string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(runID) {
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			b.WriteRune(c)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	safe := strings.Trim(b.String(), "-")
	if len(safe) > 32 {
		safe = strings.Trim(safe[:32], "-")
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	if safe == "" {
		return namePrefix + hex.EncodeToString(suffix)
	}
	return namePrefix + safe + "-" + hex.EncodeToString(suffix)
}

var errClosed = errors.New("vercel sandbox: sandbox is closed")
