package kubernetes

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/missingstudio/sanddune/sdk"
)

// Labels and annotations on every object the provider creates.
const (
	labelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "sanddune"
	// labelSandbox names the sandbox (the pod); the Secret and the
	// NetworkPolicy of a pod carry it too.
	labelSandbox = "sanddune.dev/sandbox"
	// annotationLabels holds the CreateRequest labels verbatim (JSON):
	// values such as the repository path are no valid label values.
	annotationLabels  = "sanddune.dev/labels"
	annotationWorkdir = "sanddune.dev/workdir"
	annotationHome    = "sanddune.dev/home"
	containerName     = "sandbox"
)

// keepAlive is the pod's main process: it waits until the pod is deleted
// and exits at once on SIGTERM (a shell as PID 1 ignores it otherwise).
const keepAlive = `trap 'exit 0' TERM; while :; do sleep 3600 & wait $!; done`

// podName is a DNS label unique per sandbox: sanddune-<run>-<random>.
func podName(runID string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	run := strings.Trim(dnsSafe(runID), "-")
	if len(run) > 40 {
		run = strings.Trim(run[:40], "-")
	}
	if run == "" {
		return "sanddune-" + hex.EncodeToString(b)
	}
	return "sanddune-" + run + "-" + hex.EncodeToString(b)
}

func dnsSafe(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

// objectLabels are the Kubernetes labels of a sandbox's objects: the
// managed-by and sandbox labels, plus each CreateRequest label whose value
// is a valid label value, as sanddune.dev/<name> (sanddune.run →
// sanddune.dev/run), so that `kubectl get pods -l sanddune.dev/run=…` works.
func objectLabels(name string, req map[string]string) map[string]string {
	l := map[string]string{labelManagedBy: managedBy, labelSandbox: name}
	for k, v := range req {
		key := "sanddune.dev/" + dnsSafe(strings.TrimPrefix(k, "sanddune."))
		if len(validation.IsQualifiedName(key)) == 0 && len(validation.IsValidLabelValue(v)) == 0 {
			if _, taken := l[key]; !taken {
				l[key] = v
			}
		}
	}
	return l
}

func objectMeta(name, ns string, labels map[string]string, c config) metav1.ObjectMeta {
	raw, _ := json.Marshal(labels)
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: ns,
		Labels:    objectLabels(name, labels),
		Annotations: map[string]string{
			annotationLabels:  string(raw),
			annotationWorkdir: c.Workdir,
			annotationHome:    c.Home,
		},
	}
}

// podSpec renders the sandbox pod. The secret, when named, holds the
// environment; with a policy the pod gets the egress sidecar.
func podSpec(meta metav1.ObjectMeta, c config, secret string, policy *sdk.EgressPolicy) *corev1.Pod {
	volume := func(name string) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	}
	ctr := corev1.Container{
		Name:            containerName,
		Image:           c.Image,
		ImagePullPolicy: c.PullPolicy,
		Command:         []string{"sh", "-c", keepAlive},
		WorkingDir:      c.Workdir,
		// The workdir emptyDir belongs to root, the pod runs as run_as_user:
		// git refuses such a repository ("dubious ownership", found on a
		// real cluster) unless safe.directory, from the environment, names it.
		Env: []corev1.EnvVar{
			{Name: "HOME", Value: c.Home},
			{Name: "TMPDIR", Value: "/tmp"},
			{Name: "GIT_CONFIG_COUNT", Value: "1"},
			{Name: "GIT_CONFIG_KEY_0", Value: "safe.directory"},
			{Name: "GIT_CONFIG_VALUE_0", Value: c.Workdir},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "workdir", MountPath: c.Workdir},
			{Name: "home", MountPath: c.Home},
			{Name: "tmp", MountPath: "/tmp"},
		},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To(c.UID),
			RunAsGroup:               ptr.To(c.GID),
			AllowPrivilegeEscalation: ptr.To(false),
			ReadOnlyRootFilesystem:   ptr.To(c.ReadOnlyRoot),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
	if len(c.Resources) > 0 {
		ctr.Resources = corev1.ResourceRequirements{Requests: c.Resources, Limits: c.Resources}
	}
	if secret != "" {
		ctr.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secret}}}}
	}
	pod := &corev1.Pod{
		ObjectMeta: meta,
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{ctr},
			Volumes:                       []corev1.Volume{volume("workdir"), volume("home"), volume("tmp")},
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			AutomountServiceAccountToken:  ptr.To(c.AutomountToken),
			ServiceAccountName:            c.ServiceAccount,
			NodeSelector:                  c.NodeSelector,
			NodeName:                      c.NodeName,
			Tolerations:                   c.Tolerations,
			EnableServiceLinks:            ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true),
				FSGroup:      ptr.To(c.GID),
			},
		},
	}
	if policy != nil {
		pod.Spec.Containers = append(pod.Spec.Containers, egressSidecar(c, *policy))
		pod.Spec.Volumes = append(pod.Spec.Volumes, volume(egressVolume))
	}
	if c.RuntimeClass != "" {
		pod.Spec.RuntimeClassName = ptr.To(c.RuntimeClass)
	}
	if c.Deadline > 0 {
		pod.Spec.ActiveDeadlineSeconds = ptr.To(int64(c.Deadline.Seconds()))
	}
	return pod
}

// envSecret holds the sandbox's environment; nil when there is none.
func envSecret(meta metav1.ObjectMeta, env map[string]string) *corev1.Secret {
	if len(env) == 0 {
		return nil
	}
	s := &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeOpaque, StringData: maps.Clone(env)}
	return s
}

// denyEgress is the NetworkPolicy of `network = "none"`: no egress at all
// for the sandbox's pod.
func denyEgress(meta metav1.ObjectMeta) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: meta,
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{labelSandbox: meta.Name}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
		},
	}
}

// requestLabels reads back the CreateRequest labels of an object.
func requestLabels(meta metav1.ObjectMeta) map[string]string {
	var l map[string]string
	if err := json.Unmarshal([]byte(meta.Annotations[annotationLabels]), &l); err != nil || l == nil {
		l = map[string]string{}
	}
	return l
}
