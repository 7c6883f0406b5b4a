package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

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
		{"", "pods", "exec", "create", "to run commands"},
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
	if err := checkImage(ctx, cl, c); err != nil {
		return fmt.Errorf("kubernetes sandbox: %w", err)
	}
	if err := checkQuota(ctx, cl, ns, c); err != nil {
		return fmt.Errorf("kubernetes sandbox: %w", err)
	}
	if c.NetworkNone {
		p.log.Warn(`network = "none" relies on a CNI that enforces NetworkPolicies (Calico, Cilium, Antrea...); with one that does not, the pod keeps its network`, "namespace", ns)
	}
	return nil
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

// checkImage: with image_pull_policy "Never" the image must be on the
// node(s) already, which Node status lists. Otherwise pulling is only
// tried when the pod starts, and a failure names the image then.
func checkImage(ctx context.Context, cl *cluster, c config) error {
	if c.PullPolicy != corev1.PullNever {
		return nil
	}
	var nodes []corev1.Node
	if c.NodeName != "" {
		n, err := cl.client.CoreV1().Nodes().Get(ctx, c.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("node %q (node_name) does not exist", c.NodeName)
		}
		if err != nil {
			return nil // nodes are cluster-scoped: may not be readable
		}
		nodes = []corev1.Node{*n}
	} else {
		l, err := cl.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil
		}
		nodes = l.Items
	}
	var without []string
	for _, n := range nodes {
		if !hasImage(n, c.Image) {
			without = append(without, n.Name)
		}
	}
	if len(nodes) > 0 && len(without) == len(nodes) {
		return fmt.Errorf(`image %q is not present on node(s) %s and image_pull_policy is "Never": load it onto the nodes or allow pulling`, c.Image, strings.Join(without, ", "))
	}
	return nil
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
