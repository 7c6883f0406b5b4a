package vercel

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Credential environment variables.
const (
	envToken     = "VERCEL_TOKEN"
	envTeamID    = "VERCEL_TEAM_ID"
	envProjectID = "VERCEL_PROJECT_ID"
	envOIDC      = "VERCEL_OIDC_TOKEN"
	envBaseURL   = "SANDDUNE_VERCEL_BASE_URL"
)

// credentials say who calls the API and where sandboxes go.
type credentials struct {
	token     string // never logged
	teamID    string
	projectID string
}

// loadCredentials reads VERCEL_TOKEN + VERCEL_TEAM_ID + VERCEL_PROJECT_ID
// (all or none), else VERCEL_OIDC_TOKEN with the team and project from its
// claims; team_id and project_id in the config override either. The error
// names what is missing.
func loadCredentials(getenv func(string) string, cfg config) (credentials, error) {
	three := []string{envToken, envTeamID, envProjectID}
	var set, missing []string
	for _, k := range three {
		if getenv(k) != "" {
			set = append(set, k)
		} else {
			missing = append(missing, k)
		}
	}
	var c credentials
	switch {
	case len(set) == len(three):
		c = credentials{token: getenv(envToken), teamID: getenv(envTeamID), projectID: getenv(envProjectID)}
	case len(set) > 0:
		return c, fmt.Errorf("%s set but %s not: set all three of %s, or none of them and %s",
			strings.Join(set, " and "), strings.Join(missing, " and "), strings.Join(three, ", "), envOIDC)
	case getenv(envOIDC) != "":
		claims, err := oidcClaims(getenv(envOIDC))
		if err != nil {
			return c, fmt.Errorf("%s: %w", envOIDC, err)
		}
		c = credentials{token: getenv(envOIDC), teamID: claims.OwnerID, projectID: claims.ProjectID}
	default:
		return c, fmt.Errorf("no Vercel credentials: set %s, or %s (e.g. from `vercel env pull`)", strings.Join(three, ", "), envOIDC)
	}
	if cfg.TeamID != "" {
		c.teamID = cfg.TeamID
	}
	if cfg.ProjectID != "" {
		c.projectID = cfg.ProjectID
	}
	if c.projectID == "" {
		return c, fmt.Errorf("no Vercel project: the %s token has no project_id claim; set project_id in the sandbox block or %s", envOIDC, envProjectID)
	}
	return c, nil
}

// claims are the OIDC token claims the plugin uses.
type claims struct {
	OwnerID   string `json:"owner_id"`
	ProjectID string `json:"project_id"`
}

// oidcClaims decodes a JWT's payload. The signature is not verified (the
// API does that); only team and project are read from it.
func oidcClaims(token string) (claims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return claims{}, errors.New("not a JWT (want three dot-separated parts)")
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return claims{}, errors.New("its payload is not base64url")
	}
	var c claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return claims{}, errors.New("its payload is not JSON")
	}
	return c, nil
}
