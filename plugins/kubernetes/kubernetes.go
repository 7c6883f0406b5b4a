// Package kubernetes is the built-in "kubernetes" sandbox provider: an
// isolated sandbox that is one pod on a Kubernetes cluster.
//
// Each sandbox is a pod running `sleep` with emptyDir volumes at workdir
// (the repository), home and /tmp, a restrictive security context (non-root,
// no privilege escalation, all capabilities dropped, RuntimeDefault seccomp,
// read-only root) and no service account token unless asked for. The
// environment of CreateRequest (the host puts the block's `env`, described
// by Describe, in it) lives in a Secret the pod reads with envFrom, never
// in the pod spec or an exec URL. With
// `network = "none"` a NetworkPolicy denies all egress of the pod; with an
// egress policy an enforcer sidecar joins the pod (egress.go).
//
// Commands run through pods/exec over WebSocket (SPDY when the apiserver
// cannot upgrade), each in its own session inside the pod: a small wrapper
// records the session id, so that a timeout, a cancellation or the end of
// the command kills the whole process tree with a second exec. Copies are
// tar streams over exec. The core syncs code in and commits out with git
// bundles through these copies (the isolated contract).
//
// One client per kubeconfig and context serves every run of the plugin
// process, and `max_concurrent` bounds the pods of one block at a time:
// further runs wait in Create, in order. For `sanddune gc`, ListResources
// lists the pods by label, Recover reattaches to one and RemoveResource
// deletes it with its Secret and NetworkPolicy.
package kubernetes

import (
	"context"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"
	"k8s.io/client-go/discovery"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	networkingv1client "k8s.io/client-go/kubernetes/typed/networking/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// Version is the provider's version.
const Version = "0.1.0"

// Provider is the kubernetes sandbox provider.
type Provider struct {
	log hclog.Logger

	mu      sync.Mutex
	clients map[clientKey]*cluster
	slots   map[string]*slots // by sandbox block address

	// newCluster builds a cluster client; tests replace it with fakes.
	newCluster func(c config) (*cluster, error)
}

var (
	_ sdk.SandboxProvider  = (*Provider)(nil)
	_ sdk.ResourceLister   = (*Provider)(nil)
	_ sdk.SandboxRecoverer = (*Provider)(nil)
)

// New returns the kubernetes sandbox provider.
func New() sdk.SandboxProvider {
	return newProvider(connect)
}

func newProvider(newCluster func(config) (*cluster, error)) *Provider {
	log := sdk.DefaultLogger().Named("kubernetes")
	routeKlog(log)
	return &Provider{
		log:        log,
		clients:    map[clientKey]*cluster{},
		slots:      map[string]*slots{},
		newCluster: newCluster,
	}
}

// cluster is one API client and what exec needs besides it.
type cluster struct {
	client    apiClient
	rest      *rest.Config
	namespace string // the kubeconfig context's namespace, or "default"
}

// apiClient is the part of client-go's kubernetes.Interface the provider
// uses (client-go's fake clientset implements it). Building these typed
// clients only, not kubernetes.NewForConfig's of every API group, keeps
// the others out of the sanddune binary (bench/kubernetes.md).
type apiClient interface {
	Discovery() discovery.DiscoveryInterface
	CoreV1() corev1client.CoreV1Interface
	NetworkingV1() networkingv1client.NetworkingV1Interface
	AuthorizationV1() authorizationv1client.AuthorizationV1Interface
}

type typedClients struct {
	discovery     *discovery.DiscoveryClient
	core          *corev1client.CoreV1Client
	networking    *networkingv1client.NetworkingV1Client
	authorization *authorizationv1client.AuthorizationV1Client
}

func (c *typedClients) Discovery() discovery.DiscoveryInterface { return c.discovery }
func (c *typedClients) CoreV1() corev1client.CoreV1Interface    { return c.core }
func (c *typedClients) NetworkingV1() networkingv1client.NetworkingV1Interface {
	return c.networking
}
func (c *typedClients) AuthorizationV1() authorizationv1client.AuthorizationV1Interface {
	return c.authorization
}

// newClients builds the typed clients over one HTTP client (connection
// pool) and one rate limiter, as kubernetes.NewForConfig does.
func newClients(rc *rest.Config) (*typedClients, error) {
	if rc.RateLimiter == nil && rc.QPS > 0 {
		rc.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(rc.QPS, rc.Burst)
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, err
	}
	var c typedClients
	if c.discovery, err = discovery.NewDiscoveryClientForConfigAndClient(rc, hc); err != nil {
		return nil, err
	}
	if c.core, err = corev1client.NewForConfigAndClient(rc, hc); err != nil {
		return nil, err
	}
	if c.networking, err = networkingv1client.NewForConfigAndClient(rc, hc); err != nil {
		return nil, err
	}
	if c.authorization, err = authorizationv1client.NewForConfigAndClient(rc, hc); err != nil {
		return nil, err
	}
	return &c, nil
}

type clientKey struct{ kubeconfig, context string }

// connect builds a client from the block's kubeconfig and context,
// $KUBECONFIG or ~/.kube/config, or the in-cluster config.
func connect(c config) (*cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if c.Kubeconfig != "" {
		rules.ExplicitPath = c.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.Context})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	rc.QPS, rc.Burst = c.QPS, c.Burst
	rc.UserAgent = "sanddune-kubernetes/" + Version
	client, err := newClients(rc)
	if err != nil {
		return nil, err
	}
	return &cluster{client: client, rest: rc, namespace: ns}, nil
}

// cluster returns the shared client for c's kubeconfig and context.
func (p *Provider) cluster(c config) (*cluster, error) {
	key := clientKey{c.Kubeconfig, c.Context}
	p.mu.Lock()
	defer p.mu.Unlock()
	if cl, ok := p.clients[key]; ok {
		return cl, nil
	}
	cl, err := p.newCluster(c)
	if err != nil {
		return nil, fmt.Errorf("kubernetes sandbox: %w", err)
	}
	p.clients[key] = cl
	return cl, nil
}

func (c config) namespace(cl *cluster) string {
	if c.Namespace != "" {
		return c.Namespace
	}
	return cl.namespace
}

// Info describes the provider.
func (*Provider) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{
		Version:     Version,
		Description: "one pod per sandbox on a Kubernetes cluster",
		Sandbox:     &sdk.SandboxCapabilities{Contract: sdk.ContractIsolated, NetworkNone: true, Egress: true},
	}, nil
}

// ConfigSchema declares the block's attributes.
func (*Provider) ConfigSchema(context.Context) (sdk.Schema, error) { return schema(), nil }

// Configure validates a block.
func (*Provider) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	_, diags := decodeConfig(cfg)
	return diags, nil
}

// Describe returns the block's env (the sandbox-provider env layer).
func (*Provider) Describe(_ context.Context, cfg sdk.Config) (sdk.SandboxDescription, error) {
	c, diags := decodeConfig(cfg)
	return sdk.SandboxDescription{Env: c.Env}, diags.Err()
}

// errConfig turns invalid config met at run time into an error.
func errConfig(diags sdk.Diagnostics) error {
	return fmt.Errorf("kubernetes sandbox: invalid config: %w", diags)
}

// slots is a FIFO semaphore: max_concurrent for one sandbox block.
type slots struct {
	mu      sync.Mutex
	max     int
	used    int
	waiting []chan struct{}
}

// acquire takes a slot, waiting in line; queued is called once when the
// caller has to wait, with the slots in use and the runs ahead of it.
func (s *slots) acquire(ctx context.Context, queued func(used, ahead int)) error {
	s.mu.Lock()
	if s.used < s.max && len(s.waiting) == 0 {
		s.used++
		s.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	s.waiting = append(s.waiting, ch)
	used, ahead := s.used, len(s.waiting)-1
	s.mu.Unlock()
	queued(used, ahead)
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, w := range s.waiting {
			if w == ch {
				s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
				return ctx.Err()
			}
		}
		// Handed a slot while giving up: pass it on.
		s.releaseLocked()
		return ctx.Err()
	}
}

func (s *slots) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked()
}

func (s *slots) releaseLocked() {
	if len(s.waiting) > 0 {
		close(s.waiting[0])
		s.waiting = s.waiting[1:]
		return
	}
	s.used--
}

// slotsFor returns the semaphore of a block, or nil without max_concurrent.
func (p *Provider) slotsFor(address string, max int) *slots {
	if max <= 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.slots[address]
	if !ok {
		s = &slots{max: max}
		p.slots[address] = s
	}
	return s
}

// errClosed is returned by every call on a closed sandbox.
var errClosed = fmt.Errorf("kubernetes sandbox: %w", sandboxkit.ErrClosed)
