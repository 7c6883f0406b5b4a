// Package sdk is the contract between sanddune and its plugins.
//
// A plugin binary implements SandboxProvider or AgentProvider (or several of
// them) as plain Go values and hands them to Serve. go-plugin, gRPC and the
// generated protobuf stay behind this package: plugin authors never see
// them. The host (sanddune's core) talks to plugins through the very same Go
// interfaces via the client adapters of package sdk/host.
package sdk

import (
	"context"
	"fmt"
	"strings"

	"github.com/zclconf/go-cty/cty"
)

// Kind says which contract a component implements.
type Kind string

const (
	KindSandbox Kind = "sandbox"
	KindAgent   Kind = "agent"
)

// Info describes a component. It is returned by every provider and shown by
// `sanddune plugins list`. A provider fills Version, Description and (a
// sandbox provider) Sandbox; Serve fills Name, Kind and ProtocolVersions.
type Info struct {
	// Name is the type label used in HCL, e.g. "docker" in `sandbox "docker"
	// "x" {}`: the ServeOpts key the component is served under.
	Name string
	Kind Kind
	// Version is the plugin's own version (semver recommended).
	Version string
	// ProtocolVersions lists the plugin protocol versions the component speaks.
	ProtocolVersions []int
	// Description is one line shown in listings.
	Description string
	// Sandbox is set for sandbox providers.
	Sandbox *SandboxCapabilities
}

// Schema declares the attributes and nested blocks a provider block accepts.
// The host decodes the user's HCL against it and reports unknown attributes,
// wrong types and missing required attributes as diagnostics with source
// ranges, before any plugin is asked to do work.
type Schema struct {
	Attributes []Attribute
	Blocks     []NestedBlock
}

// Attribute is one attribute of a Schema.
type Attribute struct {
	Name        string
	Type        cty.Type // e.g. cty.String, cty.List(cty.String), cty.Map(cty.String), cty.DynamicPseudoType
	Required    bool
	Default     cty.Value // cty.NilVal when there is none; must conform to Type
	Description string
}

// Nesting says how many times a nested block may appear.
type Nesting int

const (
	NestingSingle Nesting = iota // at most once
	NestingList                  // any number of times, order kept
)

// NestedBlock is a block inside a provider block, e.g. `mount { ... }`.
type NestedBlock struct {
	TypeName    string
	Nesting     Nesting
	Required    bool // for NestingSingle: the block must appear; for NestingList: at least once
	Body        Schema
	Description string
}

// Config is a provider block decoded against the provider's Schema. It is an
// object value whose attributes are the schema's attributes and blocks
// (single blocks as objects or null, list blocks as lists of objects).
type Config struct {
	Value cty.Value
}

// Decode copies the config into a Go struct whose fields carry `cty:"name"`
// tags (see github.com/zclconf/go-cty/cty/gocty).
func (c Config) Decode(target any) error { return decodeConfig(c.Value, target) }

// IsNull reports a config that carries no block: the provider's defaults
// (what `sanddune gc` passes a provider it has no block of).
func (c Config) IsNull() bool { return c.Value == cty.NilVal || c.Value.IsNull() }

// Severity of a Diagnostic.
type Severity int

const (
	SeverityError Severity = iota
	SeverityWarning
)

// Diagnostic is a problem with user-authored config. Attribute names the
// offending attribute as a path of names from the block root (e.g.
// "network" or "mount.0.host_path"); the host maps it back to a source
// range. An empty Attribute points at the whole block.
type Diagnostic struct {
	Severity  Severity
	Summary   string
	Detail    string
	Attribute string
}

// Diagnostics is a list of Diagnostic that is also an error when it holds
// at least one error.
type Diagnostics []Diagnostic

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

// Err returns the diagnostics as an error, or nil when none is an error.
func (ds Diagnostics) Err() error {
	if !ds.HasErrors() {
		return nil
	}
	return ds
}

func (ds Diagnostics) Error() string {
	var b strings.Builder
	for i, d := range ds {
		if d.Severity != SeverityError {
			continue
		}
		if b.Len() > 0 || i > 0 {
			b.WriteString("; ")
		}
		if d.Attribute != "" {
			fmt.Fprintf(&b, "%s: ", d.Attribute)
		}
		b.WriteString(d.Summary)
		if d.Detail != "" {
			b.WriteString(": " + d.Detail)
		}
	}
	return b.String()
}

// Provider is the base every component implements.
type Provider interface {
	Info(ctx context.Context) (Info, error)
	ConfigSchema(ctx context.Context) (Schema, error)
	// Configure validates one provider block's config, decoded against
	// ConfigSchema with defaults filled in. It returns diagnostics (errors
	// and warnings) tied to attributes. It starts nothing and reaches no
	// daemon or service (that is Preflight's job); a provider that runs on
	// this machine may look at host paths the block names.
	Configure(ctx context.Context, cfg Config) (Diagnostics, error)
}
