package vercel

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/kittest"
	"github.com/missingstudio/sanddune/plugins/vercel/vercelfake"
	"github.com/missingstudio/sanddune/sdk"
)

// startFake starts the fake Vercel API with credentials in the env.
func startFake(t *testing.T) *vercelfake.Server {
	t.Helper()
	kittest.RequireEngine(t, "bubblewrap (the fake Vercel API runs commands with it)", vercelfake.Available())
	srv, err := vercelfake.New(vercelfake.Options{Token: "test-token", TeamID: "team_test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	t.Setenv(envToken, "test-token")
	t.Setenv(envTeamID, "team_test")
	t.Setenv(envProjectID, "prj_test")
	t.Setenv(envOIDC, "")
	t.Setenv(envBaseURL, srv.URL)
	return srv
}

// scripted is an API server answering each request with the next status
// of a script (200 {} once it runs out), recording what it saw.
type scripted struct {
	mu       sync.Mutex
	statuses []int
	header   map[string]string
	seen     []*http.Request
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, r)
	status := http.StatusOK
	if len(s.statuses) > 0 {
		status, s.statuses = s.statuses[0], s.statuses[1:]
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Vercel-Id", "iad1::req1")
	for k, v := range s.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	if status == http.StatusOK {
		fmt.Fprint(w, `{"command":{"id":"cmd_1","exitCode":null}}`)
		return
	}
	fmt.Fprintf(w, `{"error":{"code":"code_%d","message":"message %d"}}`, status, status)
}

// testClient returns a client of srv whose sleeps are recorded, not slept.
func testClient(t *testing.T, srv *scripted) (*client, *[]time.Duration) {
	t.Helper()
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	c := newClient(ts.URL, credentials{token: "secret-token", teamID: "team_1", projectID: "prj_1"}, hclog.NewNullLogger())
	var waits []time.Duration
	c.sleep = func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		return nil
	}
	return c, &waits
}

func TestClientHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	srv := &scripted{statuses: []int{429, 429}, header: map[string]string{"Retry-After": "2"}}
	c, waits := testClient(t, srv)
	if _, _, err := c.list(context.Background(), "prj_1", namePrefix, ""); err != nil {
		t.Fatal(err)
	}
	if len(srv.seen) != 3 || len(*waits) != 2 || (*waits)[0] != 2*time.Second || (*waits)[1] != 2*time.Second {
		t.Errorf("%d requests, waits %v; want 3 requests with 2s between them", len(srv.seen), *waits)
	}
	r := srv.seen[0]
	if r.Header.Get("Authorization") != "Bearer secret-token" || r.URL.Query().Get("teamId") != "team_1" || r.URL.Query().Get("project") != "prj_1" {
		t.Errorf("request %s %v: missing auth or scope", r.URL, r.Header)
	}
}

func TestClientBacksOffOnServerErrorsThenGivesUp(t *testing.T) {
	t.Parallel()
	srv := &scripted{statuses: []int{500, 502, 503, 504, 500, 500}}
	c, waits := testClient(t, srv)
	err := c.stop(context.Background(), "se_1")
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 500 || apiErr.Code != "code_500" || apiErr.RequestID != "iad1::req1" {
		t.Fatalf("err %v, want the last APIError", err)
	}
	for _, want := range []string{"POST /v2/sandboxes/sessions/se_1/stop", "500 code_500: message 500", "iad1::req1", "after 5 attempts"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "secret-token") {
		t.Errorf("the token leaked into the error: %v", err)
	}
	if len(srv.seen) != attempts || len(*waits) != attempts-1 {
		t.Fatalf("%d requests, %d waits", len(srv.seen), len(*waits))
	}
	for i, w := range *waits {
		lo := backoff << i
		if w < lo || w >= 2*lo {
			t.Errorf("wait %d is %v, want in [%v, %v)", i, w, lo, 2*lo)
		}
	}
}

func TestClientStartsACommandOnce(t *testing.T) {
	t.Parallel()
	srv := &scripted{statuses: []int{500}}
	c, _ := testClient(t, srv)
	if _, err := c.start(context.Background(), "se_1", cmdBody{Command: "true"}); err == nil || len(srv.seen) != 1 {
		t.Errorf("500 on cmd: err %v after %d requests; want no retry (the command may have started)", err, len(srv.seen))
	}
	srv = &scripted{statuses: []int{429}}
	c, _ = testClient(t, srv)
	if cmd, err := c.start(context.Background(), "se_1", cmdBody{Command: "true"}); err != nil || cmd.ID != "cmd_1" || len(srv.seen) != 2 {
		t.Errorf("429 on cmd: %+v %v after %d requests; want retried", cmd, err, len(srv.seen))
	}
	if ct := srv.seen[0].Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
}

func TestClientDoesNotRetryClientErrorsOrLongRetryAfter(t *testing.T) {
	t.Parallel()
	srv := &scripted{statuses: []int{403}}
	c, _ := testClient(t, srv)
	if err := c.stop(context.Background(), "se_1"); err == nil || len(srv.seen) != 1 || !strings.Contains(err.Error(), "403 code_403") {
		t.Errorf("403: %v after %d requests", err, len(srv.seen))
	}
	srv = &scripted{statuses: []int{429}, header: map[string]string{"Retry-After": "3600"}}
	c, _ = testClient(t, srv)
	if err := c.stop(context.Background(), "se_1"); err == nil || len(srv.seen) != 1 {
		t.Errorf("429 with Retry-After 3600: %v after %d requests; want no hour-long wait", err, len(srv.seen))
	}
}

func TestClientCancellation(t *testing.T) {
	t.Parallel()
	srv := &scripted{statuses: []int{503}}
	c, _ := testClient(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	c.sleep = func(ctx context.Context, _ time.Duration) error { cancel(); return sleepCtx(ctx, time.Hour) }
	if err := c.stop(ctx, "se_1"); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}

func jwt(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(payload)) + ".sig"
}

func TestCredentials(t *testing.T) {
	t.Parallel()
	oidc := jwt(`{"owner_id":"team_oidc","project_id":"prj_oidc"}`)
	for name, tc := range map[string]struct {
		env     map[string]string
		cfg     config
		want    credentials
		wantErr string
	}{
		"all three":             {env: map[string]string{envToken: "t", envTeamID: "team", envProjectID: "prj"}, want: credentials{"t", "team", "prj"}},
		"overrides":             {env: map[string]string{envToken: "t", envTeamID: "team", envProjectID: "prj"}, cfg: config{TeamID: "team2", ProjectID: "prj2"}, want: credentials{"t", "team2", "prj2"}},
		"partial":               {env: map[string]string{envToken: "t", envOIDC: oidc}, wantErr: "VERCEL_TOKEN set but VERCEL_TEAM_ID and VERCEL_PROJECT_ID not"},
		"oidc":                  {env: map[string]string{envOIDC: oidc}, want: credentials{oidc, "team_oidc", "prj_oidc"}},
		"oidc project override": {env: map[string]string{envOIDC: oidc}, cfg: config{ProjectID: "other"}, want: credentials{oidc, "team_oidc", "other"}},
		"oidc without project":  {env: map[string]string{envOIDC: jwt(`{"owner_id":"team_oidc"}`)}, wantErr: "set project_id"},
		"oidc not a jwt":        {env: map[string]string{envOIDC: "opaque"}, wantErr: "VERCEL_OIDC_TOKEN: not a JWT"},
		"none":                  {wantErr: "no Vercel credentials: set VERCEL_TOKEN, VERCEL_TEAM_ID, VERCEL_PROJECT_ID, or VERCEL_OIDC_TOKEN"},
	} {
		got, err := loadCredentials(func(k string) string { return tc.env[k] }, tc.cfg)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: err %v, want %q", name, err, tc.wantErr)
			} else if strings.Contains(err.Error(), oidc) {
				t.Errorf("%s: the token leaked into the error", name)
			}
		case err != nil || got != tc.want:
			t.Errorf("%s: %+v, %v; want %+v", name, got, err, tc.want)
		}
	}
}

func TestPreflightNamesTheProblem(t *testing.T) {
	t.Parallel()
	p := &Provider{log: hclog.NewNullLogger(), getenv: func(k string) string { return map[string]string{envTeamID: "team"}[k] }}
	err := p.Preflight(context.Background(), sdk.PreflightRequest{})
	if err == nil || !strings.Contains(err.Error(), "VERCEL_TEAM_ID set but VERCEL_TOKEN and VERCEL_PROJECT_ID not") {
		t.Errorf("partial credentials: %v", err)
	}
	srv := &scripted{statuses: []int{403}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	env := map[string]string{envToken: "secret-token", envTeamID: "team", envProjectID: "prj"}
	p = &Provider{log: hclog.NewNullLogger(), getenv: func(k string) string { return env[k] }}
	err = p.Preflight(context.Background(), sdk.PreflightRequest{Config: sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"base_url": cty.StringVal(ts.URL)})}})
	if err == nil || !strings.Contains(err.Error(), "refused the credentials for project prj") || !strings.Contains(err.Error(), "403 code_403") || strings.Contains(err.Error(), "secret-token") {
		t.Errorf("refused token: %v", err)
	}
	partial := &Provider{log: hclog.NewNullLogger(), getenv: func(k string) string { return map[string]string{envToken: "t"}[k] }}
	if res, err := partial.ListResources(context.Background(), sdk.Config{}); res != nil || err != nil {
		t.Errorf("gc with only VERCEL_TOKEN set: %v, %v; want nothing listed, no error", res, err)
	}
	block := sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"base_url": cty.StringVal(ts.URL)})}
	if _, err := partial.ListResources(context.Background(), block); err == nil || !strings.Contains(err.Error(), "vercel sandbox") {
		t.Errorf("gc of a configured block with only VERCEL_TOKEN set: %v; want the credentials error", err)
	}
}

func TestConfigDiagnostics(t *testing.T) {
	t.Parallel()
	for attr, v := range map[string]cty.Value{
		"vcpus":            cty.NumberIntVal(3),
		"timeout":          cty.StringVal("forever"),
		"runtime":          cty.StringVal("node18"),
		"network_policy":   cty.StringVal("some"),
		"network_policy.0": cty.ListVal([]cty.Value{cty.StringVal("https://x.com/")}),
		"ports.0":          cty.ListVal([]cty.Value{cty.NumberIntVal(70000)}),
		"base_url":         cty.StringVal("vercel.com"),
	} {
		name := strings.Split(attr, ".")[0]
		_, diags := decodeConfig(sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{name: v})})
		if len(diags) != 1 || diags[0].Attribute != attr {
			t.Errorf("%s = %#v: diagnostics %v, want one on %s", name, v, diags, attr)
		}
	}
	c, diags := decodeConfig(sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{
		"vcpus": cty.NumberIntVal(4), "timeout": cty.StringVal("2h"), "ports": cty.ListVal([]cty.Value{cty.NumberIntVal(3000)}),
		"network_policy": cty.TupleVal([]cty.Value{cty.StringVal("registry.npmjs.org")}),
	})})
	if diags.HasErrors() || c.Vcpus != 4 || c.Timeout != 2*time.Hour || len(c.Ports) != 1 || c.Ports[0] != 3000 ||
		string(c.NetworkPolicy) != `{"allow":["registry.npmjs.org"]}` {
		t.Errorf("valid config: %+v %v", c, diags)
	}
	if c, _ := decodeConfig(sdk.Config{}); c.Timeout != defaultTimeout || c.NetworkPolicy != nil {
		t.Errorf("defaults: %+v", c)
	}
}

func TestSandboxNames(t *testing.T) {
	t.Parallel()
	for run, prefix := range map[string]string{
		"fix-issue/20260101-abc": "sanddune-fix-issue-20260101-abc-",
		"Ünïcode run":            "sanddune-n-code-run-",
		"///":                    "sanddune-",
	} {
		if got := sandboxName(run); !strings.HasPrefix(got, prefix) || len(got) != len(prefix)+8 {
			t.Errorf("sandboxName(%q) = %q, want %s + 8 hex", run, got, prefix)
		}
	}
}

// TestSlowCreateAgainstFakeAPIMakesOneSandbox: a create that answers too
// late is retried, and the retry does not leave a second sandbox behind.
func TestSlowCreateAgainstFakeAPIMakesOneSandbox(t *testing.T) {
	srv := startFake(t)
	hold, served := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(hold) })
	t.Cleanup(release) // before srv.Close, which waits for the held request
	srv.Inject(vercelfake.Fault{Route: vercelfake.RouteCreate, Hold: hold, Served: served})
	p := &Provider{getenv: os.Getenv, log: hclog.NewNullLogger(), timeout: 500 * time.Millisecond}
	ctx := context.Background()
	sb, err := p.Create(ctx, sdk.CreateRequest{RunID: "slow", Labels: map[string]string{sdk.LabelRun: "slow"}})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	release() // the slow first create completes on the server
	<-served
	if got := srv.Sandboxes(); len(got) != 1 || got[0] != sb.Info().ID {
		t.Errorf("sandboxes %v, want only %s", got, sb.Info().ID)
	}
	creates := 0
	for _, r := range srv.Requests() {
		if r.Route == vercelfake.RouteCreate {
			creates++
		}
	}
	if creates != 2 {
		t.Errorf("%d create requests, want the slow one and its retry", creates)
	}
	if err := sb.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := srv.Sandboxes(); len(got) != 0 {
		t.Errorf("sandboxes left after Close: %v", got)
	}
}
