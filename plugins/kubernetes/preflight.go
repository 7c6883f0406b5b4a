package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/missingstudio/sanddune/sdk"
)

// access is one permission the provider needs in the namespace.
type access struct {
	group, resource, subresource, verb string
	why                                string
}

func (a access) String() string {
	r := a.resource
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	if a.group != "" {
		r += "." + a.group
	}
	return a.verb + " " + r
}

func required(c config) []access {
	as := []access{
		{"", "pods", "", "create", "to start sandboxes"},
		{"", "pods", "", "get", "to wait for them"},
		{"", "pods", "", "watch", "to wait for them"},
		{"", "pods", "", "list", "for sanddune gc"},
		{"", "pods", "", "delete", "to remove them"},
		{"", "pods", "exec", "get", "to run commands over WebSocket"},
		{"", "pods", "exec", "create", "to run commands over SPDY (the fallback)"},
		{"", "secrets", "", "create", "to hold the sandbox environment"},
		{"", "secrets", "", "delete", "to remove it"},
	}
	if c.NetworkNone {
		as = append(as,
			access{"networking.k8s.io", "networkpolicies", "", "create", `for network = "none"`},
			access{"networking.k8s.io", "networkpolicies", "", "delete", `for network = "none"`})
	}
	return as
}

// Preflight checks that the API answers, the namespace exists, the
// credentials may do what a run needs (SelfSubjectAccessReview), the image
// is on the nodes when it is never pulled, and a ResourceQuota leaves room
// for one more sandbox.
func (p *Provider) Preflight(ctx context.Context, req sdk.PreflightRequest) error {
	c, diags := decodeConfig(req.Config)
	if diags.HasErrors() {
		return errConfig(diags)
	}
	cl, err := p.cluster(c)
	if err != nil {
		return fmt.Errorf("%w (set kubeconfig/context on the sandbox block, or KUBECONFIG)", err)
	}
	ns := c.namespace(cl)
	if _, err := cl.client.Discovery().ServerVersion(); err != nil {
		return fmt.Errorf("kubernetes sandbox: the API server at %s does not answer: %w", cl.rest.Host, err)
	}
	if _, err := cl.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return fmt.Errorf("kubernetes sandbox: namespace %q does not exist: create it (kubectl create namespace %s) or set namespace", ns, ns)
	}
	var missing []string
	for _, a := range required(c) {
		ok, err := allowed(ctx, cl, ns, a)
		if err != nil {
			return fmt.Errorf("kubernetes sandbox: checking permissions: %w", err)
		}
		if !ok {
			missing = append(missing, fmt.Sprintf("%s (%s)", a, a.why))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("kubernetes sandbox: the credentials may not, in namespace %s: %s; apply plugins/kubernetes/rbac.yaml (a Role and RoleBinding) for them", ns, strings.Join(missing, ", "))
	}
	if err := checkImage(ctx, cl, c, p.log); err != nil {
		return fmt.Errorf("kubernetes sandbox: %w", err)
	}
	if err := checkQuota(ctx, cl, ns, c); err != nil {
		return fmt.Errorf("kubernetes sandbox: %w", err)
	}
	if c.NetworkNone {
		checkPolicyEnforcer(cl, p.log)
	}
	return nil
}

// policyGroups are API groups of network plugins that enforce
// NetworkPolicies; discovery lists them to every authenticated user.
var policyGroups = map[string]string{
	"crd.projectcalico.org": "Calico",
	"projectcalico.org":     "Calico",
	"cilium.io":             "Cilium",
	"crd.antrea.io":         "Antrea",
}

// checkPolicyEnforcer: network = "none" is a NetworkPolicy, which only a
// network plugin that enforces policies turns into blocked egress. It
// looks for one among the API groups and warns when it finds none (some,
// kube-router for one, install no API group: the warning cannot tell).
func checkPolicyEnforcer(cl *cluster, log hclog.Logger) {
	groups, err := cl.client.Discovery().ServerGroups()
	if err == nil {
		for _, g := range groups.Groups {
			if name, ok := policyGroups[g.Name]; ok {
				log.Info(`network = "none": NetworkPolicies are enforced`, "by", name, "api_group", g.Name)
				return
			}
		}
	}
	log.Warn(`network = "none" is a NetworkPolicy denying egress: it only blocks traffic under a network plugin that enforces policies (Calico, Cilium, Antrea, kube-router...), and none was found among the cluster's API groups; make sure yours does, or the pod keeps its network`)
}

func allowed(ctx context.Context, cl *cluster, ns string, a access) (bool, error) {
	r, err := cl.client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Group: a.group, Resource: a.resource, Subresource: a.subresource, Verb: a.verb,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return r.Status.Allowed, nil
}

// checkImage says whether the image is on the nodes (Node status lists
// their images) and what the kubelet will do about it. A registry cannot
// be asked through the API, so whether a missing image is pullable is only
// known when the pod starts (ErrImagePull then ends the run). With
// image_pull_policy "Never" an image that no node holds is an error.
func checkImage(ctx context.Context, cl *cluster, c config, log hclog.Logger) error {
	nodes, err := nodesOf(ctx, cl, c)
	if err != nil {
		return err
	}
	if nodes == nil {
		msg := fmt.Sprintf("these credentials may not read nodes: whether image %q is present on them is unknown", c.Image)
		if c.PullPolicy == corev1.PullNever {
			log.Warn(msg + `; with image_pull_policy "Never" the pod cannot start without it`)
		} else {
			log.Info(msg + "; the kubelet pulls it when the pod starts if it is missing")
		}
		return nil
	}
	var with, without []string
	for _, n := range nodes {
		if hasImage(n, c.Image) {
			with = append(with, n.Name)
		} else {
			without = append(without, n.Name)
		}
	}
	switch {
	case len(with) == 0 && c.PullPolicy == corev1.PullNever:
		return fmt.Errorf(`image %q is not present on node(s) %s and image_pull_policy is "Never": load it onto the nodes or allow pulling`, c.Image, strings.Join(without, ", "))
	case c.PullPolicy == corev1.PullAlways:
		log.Info("image is pulled whenever a pod starts (image_pull_policy Always): whether the registry serves it is known then", "image", c.Image, "present_on", with)
	case len(with) == 0:
		log.Info("image is on none of the nodes: the kubelet pulls it when the pod starts; whether the registry serves it is known then", "image", c.Image, "nodes", without)
	default:
		log.Info("image present", "image", c.Image, "nodes", with)
	}
	return nil
}

// nodesOf returns node_name's node, or every node; nil when the
// credentials may not read nodes (they are cluster-scoped).
func nodesOf(ctx context.Context, cl *cluster, c config) ([]corev1.Node, error) {
	if c.NodeName != "" {
		n, err := cl.client.CoreV1().Nodes().Get(ctx, c.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("node %q (node_name) does not exist", c.NodeName)
		}
		if err != nil {
			return nil, nil
		}
		return []corev1.Node{*n}, nil
	}
	l, err := cl.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) == 0 {
		return nil, nil
	}
	return l.Items, nil
}

func hasImage(n corev1.Node, image string) bool {
	want := []string{image}
	if !strings.Contains(strings.SplitN(image, "/", 2)[0], ".") && !strings.HasPrefix(image, "localhost/") {
		want = append(want, "docker.io/library/"+image, "docker.io/"+image)
	}
	for _, img := range n.Status.Images {
		for _, name := range img.Names {
			if slices.Contains(want, name) {
				return true
			}
		}
	}
	return false
}

// checkQuota fails when a ResourceQuota of the namespace has no room for
// one more pod, or for the block's requests.
func checkQuota(ctx context.Context, cl *cluster, ns string, c config) error {
	l, err := cl.client.CoreV1().ResourceQuotas(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil // quotas may not be readable; the pod create says so then
	}
	var errs []error
	for _, q := range l.Items {
		need := corev1.ResourceList{corev1.ResourcePods: resourceOne, "count/pods": resourceOne}
		for name, v := range c.Resources {
			need["requests."+name] = v
			need["limits."+name] = v
			need[name] = v
		}
		for name, n := range need {
			hard, ok := q.Status.Hard[name]
			if !ok {
				continue
			}
			used := q.Status.Used[name]
			used.Add(n)
			if used.Cmp(hard) > 0 {
				u := q.Status.Used[name]
				errs = append(errs, fmt.Errorf("ResourceQuota %s/%s has no room for %s %s (used %s of %s)", ns, q.Name, n.String(), name, u.String(), hard.String()))
			}
		}
	}
	return errors.Join(errs...)
}

var resourceOne = resource.MustParse("1")
