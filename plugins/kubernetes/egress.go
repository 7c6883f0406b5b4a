package kubernetes

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"

	"github.com/missingstudio/sanddune/internal/egress"
	"github.com/missingstudio/sanddune/sdk"
)

// The egress sidecar: a second container of the sandbox's pod (so in its
// network namespace), of the sandbox's own image (no extra pull), root with
// CAP_NET_ADMIN only, running the enforcer. The enforcer is not in the
// image and the node is not this machine: Create streams it over
// pods/exec into an emptyDir only the sidecar mounts, where the sidecar's
// shell waits for it.
const (
	egressContainer = "egress"
	egressVolume    = "egress"
	egressDir       = "/.sanddune-egress"
)

// enforcerPath is the enforcer in the sidecar.
var enforcerPath = path.Join(egressDir, egress.BinaryName)

// awaitEnforcer is the sidecar's command: it waits until the enforcer is
// in place ($0), then runs it with the policy ($1).
const awaitEnforcer = `trap 'exit 0' TERM; while [ ! -x "$0" ]; do sleep 0.1; done; exec "$0" "$1"`

// installEnforcer writes stdin to $0 whole, then makes it executable (what
// awaitEnforcer waits for).
const installEnforcer = `cat >"$0.part" && chmod 755 "$0.part" && mv -f "$0.part" "$0"`

// egressSidecar is the sidecar container of policy.
func egressSidecar(c config, policy sdk.EgressPolicy) corev1.Container {
	return corev1.Container{
		Name:            egressContainer,
		Image:           c.Image,
		ImagePullPolicy: c.PullPolicy,
		Command:         []string{"sh", "-c", awaitEnforcer, enforcerPath, egress.PolicyArg(policy.Allow, policy.Hosts)},
		VolumeMounts:    []corev1.VolumeMount{{Name: egressVolume, MountPath: egressDir}},
		SecurityContext: &corev1.SecurityContext{
			RunAsUser:                ptr.To[int64](0),
			RunAsGroup:               ptr.To[int64](0),
			RunAsNonRoot:             ptr.To(false),
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(true),
			Capabilities: &corev1.Capabilities{
				Drop: []corev1.Capability{"ALL"},
				Add:  []corev1.Capability{"NET_ADMIN"},
			},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
}

// podSecurityHint explains a pod the namespace's Pod Security admission
// refused: the sidecar needs root with NET_ADMIN, which the baseline and
// restricted levels forbid.
func podSecurityHint(err error, ns string) error {
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
		return err
	}
	return fmt.Errorf("%w: egress runs an enforcer sidecar as root with CAP_NET_ADMIN in the pod's network namespace (the sandbox container keeps no capability), "+
		"which Pod Security levels baseline and restricted forbid: use a namespace whose level allows it "+
		"(kubectl label namespace %s pod-security.kubernetes.io/enforce=privileged --overwrite), or remove the egress block", err, ns)
}

// egressGuard follows a sandbox's enforcer through the sidecar's log.
type egressGuard struct {
	monitor *egress.Monitor
	ended   chan struct{} // the log stream ended (the sidecar stopped)
	stop    context.CancelFunc
}

// endWait bounds how long Close waits for the sidecar's last refusals
// once the pod is deleted (its grace period is 5 s).
const endWait = 15 * time.Second

// startEgress puts the enforcer binary in the running sidecar, follows
// its output and waits until its rules are in place.
func (s *sandbox) startEgress(ctx context.Context, binary string) error {
	f, err := os.Open(binary)
	if err != nil {
		return fmt.Errorf("egress enforcer: %w", err)
	}
	defer f.Close()
	var stderr bytes.Buffer
	if err := s.stream(ctx, egressContainer, []string{"sh", "-c", installEnforcer, enforcerPath}, f, io.Discard, &stderr); err != nil {
		return fmt.Errorf("copy the egress enforcer into the sidecar: %w%s", err, reasonSuffix("", strings.TrimSpace(stderr.String())))
	}
	logCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	logs, err := s.cl.client.CoreV1().Pods(s.ns).GetLogs(s.name, &corev1.PodLogOptions{Container: egressContainer, Follow: true}).Stream(logCtx)
	if err != nil {
		stop()
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("follow the egress sidecar: %w (the credentials need get pods/log: apply plugins/kubernetes/rbac.yaml)", err)
		}
		return fmt.Errorf("follow the egress sidecar: %w", err)
	}
	g := &egressGuard{ended: make(chan struct{}), stop: stop}
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, logs)
		logs.Close()
		pw.CloseWithError(err)
		close(g.ended)
	}()
	g.monitor = egress.Follow(pr)
	s.egress = g
	if err := g.monitor.Ready(ctx); err != nil {
		return fmt.Errorf("egress sidecar: %w", err)
	}
	return nil
}

// end waits, bounded, for the sidecar's log to end (the pod is being
// deleted), so that its last refusals reach WatchEgress, then stops
// following it.
func (g *egressGuard) end(ctx context.Context) {
	select {
	case <-g.ended:
	case <-time.After(endWait):
	case <-ctx.Done():
	}
	g.stop()
}

// WatchEgress implements sdk.EgressWatcher: the sidecar's refusals.
func (s *sandbox) WatchEgress(ctx context.Context, report func(sdk.EgressDenial)) error {
	if s.egress == nil {
		<-ctx.Done()
		return nil
	}
	return s.egress.monitor.Watch(ctx, func(d egress.Denial) { report(sdk.EgressDenial(d)) })
}

var _ sdk.EgressWatcher = (*sandbox)(nil)
