package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/missingstudio/sanddune/internal/egress"
	"github.com/missingstudio/sanddune/sdk"
)

// cleanupTimeout bounds the calls that tear a sandbox down after its
// context is gone.
const cleanupTimeout = time.Minute

// sandbox is one pod.
type sandbox struct {
	cl        *cluster
	ns, name  string
	info      sdk.SandboxInfo
	roots     []string // workdir, home: where paths may point
	release   func()   // frees the max_concurrent slot; nil for none
	recovered bool     // Close leaves the pod
	egress    *egressGuard

	mu     sync.Mutex
	closed bool
	execs  sync.WaitGroup
}

// Create starts a pod (with its Secret and NetworkPolicy) and waits until
// it runs. With max_concurrent it first waits for a slot.
func (p *Provider) Create(ctx context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	c, diags := decodeConfig(req.Config)
	if diags.HasErrors() {
		return nil, errConfig(diags)
	}
	cl, err := p.cluster(c)
	if err != nil {
		return nil, err
	}
	var release func()
	if s := p.slotsFor(req.Labels[sdk.LabelSandbox], c.MaxConcurrent); s != nil {
		start, queued := time.Now(), false
		err := s.acquire(ctx, func(used, ahead int) {
			queued = true
			p.log.Debug("run queued", "run", req.RunName, "max_concurrent", c.MaxConcurrent, "ahead", ahead)
			req.Report(sdk.Progress{Waiting: true, Message: queueMessage(used, ahead, c.MaxConcurrent)})
		})
		if err != nil {
			return nil, fmt.Errorf("kubernetes sandbox: waiting for one of max_concurrent = %d slots: %w", c.MaxConcurrent, err)
		}
		if queued {
			req.Report(sdk.Progress{Message: fmt.Sprintf("left the queue after %s; creating the pod", time.Since(start).Round(time.Second))})
		}
		release = s.release
	}
	sb, err := p.create(ctx, cl, c, req)
	if err != nil {
		if release != nil {
			release()
		}
		return nil, err
	}
	sb.release = release
	return sb, nil
}

// queueMessage says what a queued run waits for: used pods of the block
// are running (or starting) and ahead runs are queued before it.
func queueMessage(used, ahead, max int) string {
	msg := fmt.Sprintf("queued behind %d running %s", used, plural(used, "pod"))
	if ahead > 0 {
		msg += fmt.Sprintf(" and %d queued %s", ahead, plural(ahead, "run"))
	}
	return msg + fmt.Sprintf(" (max_concurrent %d)", max)
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func (p *Provider) create(ctx context.Context, cl *cluster, c config, req sdk.CreateRequest) (*sandbox, error) {
	ns := c.namespace(cl)
	name := podName(req.RunID)
	meta := objectMeta(name, ns, req.Labels, c)
	sb := newSandbox(cl, ns, name, c.Workdir, c.Home)
	enforcer := ""
	if req.Egress != nil {
		var err error
		if enforcer, err = egress.Binary(); err != nil {
			return nil, fmt.Errorf("kubernetes sandbox: %w", err)
		}
	}

	secretName := ""
	if env := envSecret(meta, req.Env); env != nil {
		if _, err := cl.client.CoreV1().Secrets(ns).Create(ctx, env, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("kubernetes sandbox: create secret %s/%s: %w", ns, name, err)
		}
		secretName = name
	}
	if c.NetworkNone {
		if _, err := cl.client.NetworkingV1().NetworkPolicies(ns).Create(ctx, denyEgress(meta), metav1.CreateOptions{}); err != nil {
			sb.remove(ctx)
			return nil, fmt.Errorf("kubernetes sandbox: create network policy %s/%s: %w", ns, name, err)
		}
	}
	pod, err := cl.client.CoreV1().Pods(ns).Create(ctx, podSpec(meta, c, secretName, req.Egress), metav1.CreateOptions{})
	if err != nil {
		sb.remove(ctx)
		if req.Egress != nil {
			err = podSecurityHint(err, ns)
		}
		return nil, fmt.Errorf("kubernetes sandbox: create pod %s/%s: %w", ns, name, err)
	}
	p.log.Debug("pod created", "pod", ns+"/"+name, "run", req.RunName)
	if err := waitRunning(ctx, cl, pod, c.StartTimeout); err != nil {
		sb.remove(ctx)
		return nil, fmt.Errorf("kubernetes sandbox: pod %s/%s: %w", ns, name, err)
	}
	if enforcer != "" {
		startCtx, cancel := context.WithTimeout(ctx, c.StartTimeout)
		defer cancel()
		if err := sb.startEgress(startCtx, enforcer); err != nil {
			sb.remove(ctx)
			return nil, fmt.Errorf("kubernetes sandbox: pod %s/%s: %w", ns, name, err)
		}
	}
	return sb, nil
}

func newSandbox(cl *cluster, ns, name, workdir, home string) *sandbox {
	return &sandbox{
		cl: cl, ns: ns, name: name,
		roots: []string{workdir, home},
		info: sdk.SandboxInfo{
			ID:       ns + "/" + name,
			RepoPath: workdir,
			HomePath: home,
		},
	}
}

// waitRunning watches the pod until its container runs. Image, config and
// scheduling failures end the wait with the cluster's reason.
func waitRunning(ctx context.Context, cl *cluster, pod *corev1.Pod, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := pod
	for {
		if done, err := podStarted(last); done || err != nil {
			return err
		}
		w, err := cl.client.CoreV1().Pods(pod.Namespace).Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", pod.Name).String(),
			ResourceVersion: last.ResourceVersion,
		})
		if err != nil {
			if ctx.Err() != nil {
				return startErr(ctx, last, timeout)
			}
			return fmt.Errorf("watch: %w", err)
		}
		for ev := range w.ResultChan() {
			switch ev.Type {
			case watch.Deleted:
				w.Stop()
				return errors.New("deleted while starting")
			case watch.Added, watch.Modified:
				p, ok := ev.Object.(*corev1.Pod)
				if !ok || p.Name != pod.Name {
					continue
				}
				last = p
				if done, err := podStarted(p); done || err != nil {
					w.Stop()
					return err
				}
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return startErr(ctx, last, timeout)
		}
		// The watch ended (timeout, apiserver restart): re-read and watch again.
		if p, err := cl.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{}); err == nil {
			last = p
		}
	}
}

func startErr(ctx context.Context, pod *corev1.Pod, timeout time.Duration) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("not running after start_timeout %s (phase %s%s)", timeout, pod.Status.Phase, pendingReason(pod))
	}
	return ctx.Err()
}

// fatalWaiting are container waiting reasons that do not heal by waiting.
var fatalWaiting = map[string]string{
	"ErrImagePull":               "the image cannot be pulled",
	"ImagePullBackOff":           "the image cannot be pulled",
	"ErrImageNeverPull":          `the image is not present on the node and image_pull_policy is "Never"`,
	"InvalidImageName":           "the image name is invalid",
	"CreateContainerConfigError": "the container config is invalid",
	"CreateContainerError":       "the container cannot be created",
}

// podStarted reports whether every container of the pod (the sandbox, and
// the egress sidecar when there is one) runs, or why one never will.
func podStarted(p *corev1.Pod) (bool, error) {
	return containersRunning(p, func(string) bool { return true })
}

// sandboxStarted is podStarted for the sandbox container alone (what gc
// needs of a pod whose sidecar may have ended).
func sandboxStarted(p *corev1.Pod) (bool, error) {
	return containersRunning(p, func(name string) bool { return name == containerName })
}

// containersRunning reports whether the pod's containers that count run,
// or why one never will.
func containersRunning(p *corev1.Pod, counts func(name string) bool) (bool, error) {
	switch p.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		return false, fmt.Errorf("ended before it was used (phase %s%s)", p.Status.Phase, reasonSuffix(p.Status.Reason, p.Status.Message))
	}
	want, running := 0, 0
	for _, c := range p.Spec.Containers {
		if counts(c.Name) {
			want++
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if !counts(cs.Name) {
			continue
		}
		what := "the sandbox container"
		if cs.Name == egressContainer {
			what = "the egress sidecar"
		}
		if cs.State.Running != nil {
			running++
		}
		if w := cs.State.Waiting; w != nil {
			if why, ok := fatalWaiting[w.Reason]; ok {
				if cs.Name != containerName {
					why = what + ": " + why
				}
				return false, fmt.Errorf("%s: %s%s", why, w.Reason, reasonSuffix("", w.Message))
			}
		}
		if t := cs.State.Terminated; t != nil {
			return false, fmt.Errorf("%s exited (%s, code %d)", what, t.Reason, t.ExitCode)
		}
	}
	return running == want, nil
}

// pendingReason explains a pod that is not running yet: unschedulable,
// or its container waiting.
func pendingReason(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return reasonSuffix(c.Reason, c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			return reasonSuffix(w.Reason, w.Message)
		}
	}
	if p.Spec.NodeName == "" {
		return ", not scheduled to a node yet"
	}
	return ""
}

func reasonSuffix(reason, msg string) string {
	var parts []string
	for _, s := range []string{reason, msg} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, ": ")
}

func (s *sandbox) Info() sdk.SandboxInfo { return s.info }

func (s *sandbox) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// begin registers a call; it fails once the sandbox is closed.
func (s *sandbox) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	s.execs.Add(1)
	return nil
}

// Close deletes the pod, its Secret and NetworkPolicy (a recovered
// sandbox's stay) and frees its max_concurrent slot. It is idempotent.
func (s *sandbox) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if s.release != nil {
		defer s.release()
	}
	if s.recovered {
		return nil
	}
	if err := s.remove(ctx); err != nil {
		return fmt.Errorf("kubernetes sandbox: delete %s: %w (sanddune gc retries)", s.info.ID, err)
	}
	return nil
}

// remove deletes the pod and what belongs to it, with foreground
// propagation, then lets the egress sidecar report its last refusals.
// Missing objects are fine.
func (s *sandbox) remove(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	err := removeObjects(ctx, s.cl, s.ns, s.name)
	if s.egress != nil {
		s.egress.end(ctx)
	}
	return err
}

func removeObjects(ctx context.Context, cl *cluster, ns, name string) error {
	opts := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}
	var errs []error
	if err := cl.client.CoreV1().Pods(ns).Delete(ctx, name, opts); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("pod: %w", err))
	}
	if err := cl.client.CoreV1().Secrets(ns).Delete(ctx, name, opts); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		errs = append(errs, fmt.Errorf("secret: %w", err))
	}
	if err := cl.client.NetworkingV1().NetworkPolicies(ns).Delete(ctx, name, opts); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		errs = append(errs, fmt.Errorf("network policy: %w", err))
	}
	return errors.Join(errs...)
}
