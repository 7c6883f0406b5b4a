package vercel

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// DefaultBaseURL is the API the official SDK talks to.
const DefaultBaseURL = "https://vercel.com/api"

// Limits from Vercel's documentation (the plan may lower them).
const (
	defaultTimeout = 45 * time.Minute // the Hobby maximum; Vercel's own default is 5m
	maxTimeout     = 24 * time.Hour
	maxVcpus       = 32
	maxPorts       = 15
)

// runtimes are the legacy managed runtimes; without one the sandbox runs
// Vercel's default image.
var runtimes = []string{"node22", "node24", "node26", "python3.13"}

func schema() sdk.Schema {
	return sdk.Schema{Attributes: []sdk.Attribute{
		{Name: "runtime", Type: cty.String, Description: `Legacy runtime image: "node22", "node24", "node26" or "python3.13"; default Vercel's universal image.`},
		{Name: "vcpus", Type: cty.Number, Description: "Virtual CPUs: 1 or an even number up to 32 (2048 MB of memory each); default 2."},
		{Name: "timeout", Type: cty.String, Description: `How long the sandbox may live, e.g. "45m" (default) or "5h"; Vercel stops it after that, with any work not yet synced out.`},
		{Name: "ports", Type: cty.List(cty.Number), Description: "Ports to expose on public https://<subdomain>.vercel.run URLs (at most 15)."},
		{Name: "env", Type: cty.Map(cty.String), Description: "Environment for every command in the sandbox."},
		{Name: "network_policy", Type: cty.DynamicPseudoType, Description: `"allow-all" (default), "deny-all", or a list of domains the sandbox may reach.`},
		{Name: "team_id", Type: cty.String, Description: "Vercel team id; default VERCEL_TEAM_ID or the OIDC token's owner."},
		{Name: "project_id", Type: cty.String, Description: "Vercel project id or name; default VERCEL_PROJECT_ID or the OIDC token's project."},
		{Name: "base_url", Type: cty.String, Description: "API base URL (a proxy or a test server); default " + DefaultBaseURL + "."},
	}}
}

// config is a decoded, validated provider block.
type config struct {
	Runtime       string
	Vcpus         int
	Timeout       time.Duration
	Ports         []int
	Env           map[string]string
	NetworkPolicy json.RawMessage // nil: the API default (allow-all)
	TeamID        string
	ProjectID     string
	BaseURL       string
}

// decodeConfig decodes and validates a block; missing attributes take
// their defaults.
func decodeConfig(cfg sdk.Config) (config, sdk.Diagnostics) {
	var d sandboxkit.Decoder
	v := cfg.Value
	c := config{
		Runtime:   d.String(v, "runtime"),
		Env:       d.Env(v, "env"),
		TeamID:    d.String(v, "team_id"),
		ProjectID: d.String(v, "project_id"),
		BaseURL:   d.String(v, "base_url"),
		Timeout:   defaultTimeout,
	}
	if c.Runtime != "" && !slices.Contains(runtimes, c.Runtime) {
		d.Errorf("runtime", "unknown runtime", "%q: use one of %s, or leave it unset for Vercel's default image", c.Runtime, strings.Join(runtimes, ", "))
	}
	if n, ok := d.Int(v, "vcpus"); ok {
		if n < 1 || n > maxVcpus || n > 1 && n%2 != 0 {
			d.Errorf("vcpus", "invalid vcpus", "%d: Vercel takes 1 or an even number up to %d", n, maxVcpus)
		}
		c.Vcpus = int(n)
	}
	if s := d.String(v, "timeout"); s != "" {
		t, err := time.ParseDuration(s)
		switch {
		case err != nil:
			d.Errorf("timeout", "invalid timeout", `%q: use a duration such as "45m" or "2h"`, s)
		case t < time.Minute || t > maxTimeout:
			d.Errorf("timeout", "invalid timeout", "%s: must be between 1m and %s", s, maxTimeout)
		default:
			c.Timeout = t
		}
	}
	if pv := sandboxkit.Attr(v, "ports"); !pv.IsNull() {
		ports := d.StringList(v, "ports") // numbers convert to strings
		if len(ports) > maxPorts {
			d.Errorf("ports", "too many ports", "Vercel exposes at most %d ports", maxPorts)
		}
		for i, p := range ports {
			var n int
			if _, err := fmt.Sscan(p, &n); err != nil || n < 1 || n > 65535 || fmt.Sprint(n) != p {
				d.Errorf(fmt.Sprintf("ports.%d", i), "invalid port", "%s is not a port number", p)
				continue
			}
			c.Ports = append(c.Ports, n)
		}
	}
	c.NetworkPolicy = networkPolicy(&d, v)
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			d.Errorf("base_url", "invalid base_url", "%q is not an http(s) URL", c.BaseURL)
		}
	}
	return c, d.Diags
}

// networkPolicy decodes network_policy into the API's policy object.
func networkPolicy(d *sandboxkit.Decoder, v cty.Value) json.RawMessage {
	nv := sandboxkit.Attr(v, "network_policy")
	if nv.IsNull() {
		return nil
	}
	var policy any
	if nv.Type() == cty.String {
		switch mode := nv.AsString(); mode {
		case "allow-all", "deny-all":
			policy = map[string]string{"mode": mode}
		default:
			d.Errorf("network_policy", "invalid network_policy", `%q: use "allow-all", "deny-all" or a list of domains`, mode)
			return nil
		}
	} else {
		domains := d.StringList(v, "network_policy")
		for i, dom := range domains {
			if dom == "" || strings.ContainsAny(dom, " /:") {
				d.Errorf(fmt.Sprintf("network_policy.%d", i), "invalid domain", "%q is not a domain name", dom)
			}
		}
		if len(domains) == 0 {
			d.Errorf("network_policy", "empty network_policy", `an empty list allows nothing: say "deny-all"`)
			return nil
		}
		policy = map[string]any{"allow": domains}
	}
	b, _ := json.Marshal(policy)
	return b
}
