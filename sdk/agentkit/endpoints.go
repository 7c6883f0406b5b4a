package agentkit

import (
	"net"
	"net/url"
	"strings"
)

// modelAPIs are the API hosts of common model providers, by the provider
// part of a provider/model id.
var modelAPIs = map[string]string{
	"anthropic": "api.anthropic.com", "openai": "api.openai.com", "google": "generativelanguage.googleapis.com",
	"openrouter": "openrouter.ai", "groq": "api.groq.com", "xai": "api.x.ai", "deepseek": "api.deepseek.com",
	"mistral": "api.mistral.ai",
}

// Endpoints is what an agent declares in AgentDescription.Endpoints (egress
// entries): the host and port of baseURL when it is set, else the API host
// of the model's provider (the provider of a provider/model id, when
// known), else defaults.
func Endpoints(baseURL, model string, defaults ...string) []string {
	if u, err := url.Parse(baseURL); baseURL != "" && err == nil && u.Hostname() != "" {
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		if port == "" {
			return []string{u.Hostname()}
		}
		return []string{net.JoinHostPort(u.Hostname(), port)}
	}
	if prov, _, ok := strings.Cut(model, "/"); ok && modelAPIs[prov] != "" {
		return []string{modelAPIs[prov]}
	}
	return defaults
}
