package agentkit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
)

// Base implements the sdk.AgentProvider methods that follow from what an
// agent declares: Info, ConfigSchema, ParseStream and RewriteSession. An
// agent provider embeds it and writes Configure, Describe and BuildCommand;
// it may replace any of Base's methods with its own.
//
// The schema is the common attributes around the agent's own: model, the
// agent's Attributes, env, capture_sessions (when the agent has session
// files) and binary, whose default is Binary.
type Base struct {
	Name, Version, Description string
	// Binary is the CLI's executable name, the binary attribute's default;
	// "" is Name.
	Binary string
	// Model describes the model attribute; ModelRequired makes it required.
	Model         string
	ModelRequired bool
	// Attributes are the agent's own attributes, listed after model.
	Attributes []sdk.Attribute
	// EnvExample is the credential variable env's description shows.
	EnvExample string
	// BaseURL says how the CLI receives base_url (the model API's URL, for
	// a gateway or proxy); "" leaves base_url out.
	BaseURL string
	// CaptureSessions describes capture_sessions (default true, returned
	// as AgentDescription.CaptureSessions via Common); "" leaves it out.
	CaptureSessions string
	// SessionFields are the cwd fields of the agent's JSONL session files,
	// as rewriteJSONLCwd names them; with none, RewriteSession returns the
	// data unchanged.
	SessionFields []string
	// NewParser returns the parser of one iteration's stream; nil makes
	// every line a text event.
	NewParser func(sdk.Config) sdk.Parser
}

// Info implements sdk.Provider.
func (b Base) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{
		Version:     b.Version,
		Description: b.Description,
	}, nil
}

// ConfigSchema implements sdk.Provider.
func (b Base) ConfigSchema(context.Context) (sdk.Schema, error) {
	attrs := []sdk.Attribute{{Name: "model", Type: cty.String, Required: b.ModelRequired, Description: b.Model}}
	attrs = append(attrs, b.Attributes...)
	if b.BaseURL != "" {
		attrs = append(attrs, sdk.Attribute{Name: "base_url", Type: cty.String, Description: "Base URL of the model API, an absolute http(s) URL (a gateway or proxy; the CLI's default when unset): " + b.BaseURL})
	}
	attrs = append(attrs, sdk.Attribute{Name: "env", Type: cty.Map(cty.String), Description: `Environment for the agent, e.g. { ` + b.EnvExample + ` = "..." }.`})
	if b.CaptureSessions != "" {
		attrs = append(attrs, sdk.Attribute{Name: "capture_sessions", Type: cty.Bool, Default: cty.True, Description: b.CaptureSessions})
	}
	attrs = append(attrs, sdk.Attribute{Name: "binary", Type: cty.String, Default: cty.StringVal(b.binary()), Description: "Name or path of the " + b.binary() + " executable inside the sandbox."})
	return sdk.Schema{Attributes: attrs}, nil
}

// ParseStream implements sdk.AgentProvider with a parser from NewParser.
func (b Base) ParseStream(ctx context.Context, cfg sdk.Config, lines <-chan []byte, emit func(sdk.Event)) error {
	var p sdk.Parser = textParser{}
	if b.NewParser != nil {
		p = b.NewParser(cfg)
	}
	return sdk.ParseLines(ctx, lines, emit, p)
}

// RewriteSession implements sdk.AgentProvider: it rewrites SessionFields.
func (b Base) RewriteSession(_ context.Context, req sdk.RewriteSessionRequest) ([]byte, error) {
	return rewriteJSONLCwd(req.Data, req.FromCwd, req.ToCwd, b.SessionFields...), nil
}

// textParser makes every line a text event.
type textParser struct{}

func (textParser) Parse(line []byte) []sdk.Event { return TextLine(line) }
func (textParser) Close() []sdk.Event            { return nil }

// Common holds the common attributes of an agent block.
type Common struct {
	Model, Binary string
	// BaseURL is base_url, "" when unset.
	BaseURL string
	// Env goes in AgentDescription.Env, never in Command.Env.
	Env map[string]string
	// CaptureSessions goes in AgentDescription.CaptureSessions (false when
	// the agent declares no capture_sessions).
	CaptureSessions bool
}

// Common reads the common attributes; binary is Base.Binary when unset.
func (b Base) Common(cfg sdk.Config) Common {
	c := Common{Model: String(cfg, "model"), Binary: String(cfg, "binary"), BaseURL: String(cfg, "base_url"), Env: stringMap(cfg, "env"),
		CaptureSessions: b.CaptureSessions != "" && boolAttr(cfg, "capture_sessions", true)}
	if c.Binary == "" {
		c.Binary = b.binary()
	}
	return c
}

func (b Base) binary() string {
	if b.Binary == "" {
		return b.Name
	}
	return b.Binary
}

// CheckCommon reports a string attribute set to "" (model, binary and the
// agent's own: unset, an attribute takes its default), a base_url that is
// not an absolute http(s) URL and invalid env names.
func CheckCommon(cfg sdk.Config) sdk.Diagnostics {
	ds := checkNotEmpty(cfg, "model")
	ds = append(ds, checkNotEmpty(cfg, "binary")...)
	if v := cfg.Value; v != cty.NilVal && v.IsKnown() && !v.IsNull() && v.Type().IsObjectType() {
		for _, name := range slices.Sorted(maps.Keys(v.Type().AttributeTypes())) {
			if name != "model" && name != "binary" {
				ds = append(ds, checkNotEmpty(cfg, name)...)
			}
		}
	}
	ds = append(ds, checkBaseURL(cfg)...)
	return append(ds, sdk.CheckEnv(stringMap(cfg, "env"), "env")...)
}

// checkBaseURL reports a base_url that is set but not an absolute http or
// https URL with a host (and no credentials: they would reach logs).
func checkBaseURL(cfg sdk.Config) sdk.Diagnostics {
	v := attr(cfg, "base_url")
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() || v.Type() != cty.String || v.AsString() == "" {
		return nil // "" is reported as empty
	}
	u, err := url.Parse(v.AsString())
	problem := ""
	switch {
	case err != nil:
		problem = "it does not parse"
	case u.Scheme != "http" && u.Scheme != "https":
		problem = "it must start with http:// or https://"
	case u.Host == "":
		problem = "it has no host"
	case u.User != nil:
		problem = "it must not carry credentials; pass the key in env"
	}
	if problem == "" {
		return nil
	}
	return sdk.Diagnostics{{
		Summary:   "Invalid base_url",
		Detail:    fmt.Sprintf("base_url must be an absolute http(s) URL, like https://gateway.example/v1: %s.", problem),
		Attribute: "base_url",
	}}
}

// ResumeSession returns the session a command resumes or forks: the
// request's ResumeSessionID on the first iteration, "" on later ones. It
// rejects a fork without a session and an unsafe id (see CheckSessionID).
func ResumeSession(req sdk.CommandRequest) (string, error) {
	if req.ForkSession && req.ResumeSessionID == "" {
		return "", errors.New("fork needs a session to resume")
	}
	if req.ResumeSessionID == "" || req.Iteration > 1 {
		return "", nil
	}
	if err := CheckSessionID(req.ResumeSessionID); err != nil {
		return "", err
	}
	return req.ResumeSessionID, nil
}
