package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/missingstudio/sanddune/sdk"
)

var managedSelector = labelManagedBy + "=" + managedBy

// target is a cluster gc looks at, with the namespace it lists in when
// the credentials may not list in all.
type target struct {
	cl *cluster
	ns string
}

// targets are the clusters `sanddune gc` looks at. With a block's config:
// its cluster (kubeconfig, context) and namespace. With the defaults: the
// default cluster ($KUBECONFIG, ~/.kube/config or in-cluster; none is
// fine) and every cluster this plugin process has talked to.
func (p *Provider) targets(cfg sdk.Config) ([]target, error) {
	if !cfg.IsNull() {
		c, diags := decodeConfig(cfg)
		if diags.HasErrors() {
			return nil, errConfig(diags)
		}
		cl, err := p.cluster(c)
		if err != nil {
			return nil, err
		}
		return []target{{cl, c.namespace(cl)}}, nil
	}
	def, err := p.cluster(config{QPS: 50, Burst: 100})
	if err != nil && !noConfig(err) {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []target
	if def != nil {
		out = append(out, target{def, def.namespace})
	}
	for _, cl := range p.clients {
		if cl != def {
			out = append(out, target{cl, cl.namespace})
		}
	}
	return out, nil
}

// noConfig reports a machine with no kubeconfig and outside any cluster:
// there is nothing to list.
func noConfig(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if clientcmd.IsEmptyConfig(e) {
			return true
		}
	}
	return strings.Contains(err.Error(), "unable to load in-cluster configuration")
}

// ListResources lists the sandbox pods of the block's cluster (with the
// defaults: of every known cluster), in all namespaces when the
// credentials may, else in the block's namespace (the context's). The
// resource ID is namespace/pod.
func (p *Provider) ListResources(ctx context.Context, cfg sdk.Config) ([]sdk.Resource, error) {
	ts, err := p.targets(cfg)
	if err != nil {
		return nil, err
	}
	var out []sdk.Resource
	seen := map[string]bool{}
	for _, t := range ts {
		pods, err := listPods(ctx, t)
		if err != nil {
			return out, fmt.Errorf("kubernetes sandbox: list pods: %w", err)
		}
		for _, pod := range pods {
			id := pod.Namespace + "/" + pod.Name
			if !seen[id] && pod.DeletionTimestamp == nil {
				seen[id] = true
				out = append(out, sdk.Resource{ID: id, Labels: requestLabels(pod.ObjectMeta)})
			}
		}
	}
	return out, nil
}

func listPods(ctx context.Context, t target) ([]corev1.Pod, error) {
	opts := metav1.ListOptions{LabelSelector: managedSelector}
	l, err := t.cl.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
	if apierrors.IsForbidden(err) {
		l, err = t.cl.client.CoreV1().Pods(t.ns).List(ctx, opts)
	}
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// find returns the cluster holding the sandbox pod id (namespace/pod).
func (p *Provider) find(ctx context.Context, cfg sdk.Config, id string) (*cluster, *corev1.Pod, error) {
	ns, name, ok := strings.Cut(id, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, nil, fmt.Errorf("kubernetes sandbox: %q is no sandbox pod (want namespace/pod)", id)
	}
	ts, err := p.targets(cfg)
	if err != nil {
		return nil, nil, err
	}
	var errs []error
	for _, t := range ts {
		cl := t.cl
		pod, err := cl.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		if pod.Labels[labelManagedBy] != managedBy {
			return nil, nil, fmt.Errorf("kubernetes sandbox: pod %s is not managed by sanddune", id)
		}
		return cl, pod, nil
	}
	if len(errs) > 0 {
		return nil, nil, fmt.Errorf("kubernetes sandbox: get pod %s: %w", id, errors.Join(errs...))
	}
	return nil, nil, fmt.Errorf("kubernetes sandbox: no sandbox pod %s", id)
}

// RemoveResource deletes a sandbox pod with its Secret and NetworkPolicy.
func (p *Provider) RemoveResource(ctx context.Context, cfg sdk.Config, id string) error {
	cl, pod, err := p.find(ctx, cfg, id)
	if err != nil {
		return err
	}
	if err := removeObjects(ctx, cl, pod.Namespace, pod.Name); err != nil {
		return fmt.Errorf("kubernetes sandbox: delete %s: %w", id, err)
	}
	return nil
}

// Recover reattaches to a running sandbox pod. Closing it leaves the pod.
func (p *Provider) Recover(ctx context.Context, cfg sdk.Config, id string) (sdk.Sandbox, error) {
	cl, pod, err := p.find(ctx, cfg, id)
	if err != nil {
		return nil, err
	}
	if done, err := sandboxStarted(pod); !done {
		if err == nil {
			err = fmt.Errorf("phase %s", pod.Status.Phase)
		}
		return nil, fmt.Errorf("kubernetes sandbox: pod %s is not running: %w", id, err)
	}
	workdir, home := pod.Annotations[annotationWorkdir], pod.Annotations[annotationHome]
	if workdir == "" || home == "" {
		return nil, fmt.Errorf("kubernetes sandbox: pod %s lacks the %s and %s annotations", id, annotationWorkdir, annotationHome)
	}
	sb := newSandbox(cl, pod.Namespace, pod.Name, workdir, home)
	sb.recovered = true
	return sb, nil
}
