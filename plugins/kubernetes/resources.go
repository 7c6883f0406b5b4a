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

// clusters are the clusters `sanddune gc` looks at: the default one
// ($KUBECONFIG, ~/.kube/config or in-cluster; none is fine) and every
// cluster this plugin process has talked to.
func (p *Provider) clusters() ([]*cluster, error) {
	def, err := p.cluster(config{QPS: 50, Burst: 100})
	if err != nil && !noConfig(err) {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*cluster
	if def != nil {
		out = append(out, def)
	}
	for _, cl := range p.clients {
		if cl != def {
			out = append(out, cl)
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

// ListResources lists the sandbox pods of every known cluster, in all
// namespaces when the credentials may, else in the context's namespace.
// The resource ID is namespace/pod.
func (p *Provider) ListResources(ctx context.Context) ([]sdk.Resource, error) {
	cls, err := p.clusters()
	if err != nil {
		return nil, err
	}
	var out []sdk.Resource
	seen := map[string]bool{}
	for _, cl := range cls {
		pods, err := listPods(ctx, cl)
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

func listPods(ctx context.Context, cl *cluster) ([]corev1.Pod, error) {
	opts := metav1.ListOptions{LabelSelector: managedSelector}
	l, err := cl.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
	if apierrors.IsForbidden(err) {
		l, err = cl.client.CoreV1().Pods(cl.namespace).List(ctx, opts)
	}
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// find returns the cluster holding the sandbox pod id (namespace/pod).
func (p *Provider) find(ctx context.Context, id string) (*cluster, *corev1.Pod, error) {
	ns, name, ok := strings.Cut(id, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return nil, nil, fmt.Errorf("kubernetes sandbox: %q is no sandbox pod (want namespace/pod)", id)
	}
	cls, err := p.clusters()
	if err != nil {
		return nil, nil, err
	}
	var errs []error
	for _, cl := range cls {
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
func (p *Provider) RemoveResource(ctx context.Context, id string) error {
	cl, pod, err := p.find(ctx, id)
	if err != nil {
		return err
	}
	if err := removeObjects(ctx, cl, pod.Namespace, pod.Name); err != nil {
		return fmt.Errorf("kubernetes sandbox: delete %s: %w", id, err)
	}
	return nil
}

// Recover reattaches to a running sandbox pod. Closing it leaves the pod.
func (p *Provider) Recover(ctx context.Context, id string) (sdk.Sandbox, error) {
	cl, pod, err := p.find(ctx, id)
	if err != nil {
		return nil, err
	}
	if done, err := podStarted(pod); !done {
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
