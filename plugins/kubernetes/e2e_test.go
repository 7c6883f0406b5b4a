package kubernetes_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/missingstudio/sanddune/internal/egress/egresstest"
	"github.com/missingstudio/sanddune/internal/kittest"
	"github.com/missingstudio/sanddune/plugins/kubernetes"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxtest"
)

// TestMain builds the egress enforcer for the real cluster's tests (the
// plugin streams it into the pod's sidecar).
func TestMain(m *testing.M) {
	if os.Getenv("SANDDUNE_K8S_E2E") == "1" {
		os.Exit(egresstest.WithEnforcer(m))
	}
	os.Exit(m.Run())
}

// TestConformanceRealCluster runs the conformance kit against a real
// cluster: SANDDUNE_K8S_E2E=1 with KUBECONFIG pointing at it (make
// e2e-k8s starts one with scripts/k8s-up.sh). SANDDUNE_K8S_NODE pins the
// pod to a node for clusters without a scheduler; SANDDUNE_K8S_IMAGE is
// the image (default the test image, imported by k8s-up.sh).
// SANDDUNE_K8S_NO_NETWORK_POLICY=1 says the cluster's network plugin
// enforces no NetworkPolicies, so that network = "none" cannot be checked
// by connecting out (TestNetworkPolicyRealCluster checks the policy).
func TestConformanceRealCluster(t *testing.T) {
	opts := sandboxtest.Options{Config: e2eConfig(t, nil)}
	if os.Getenv("SANDDUNE_K8S_NO_NETWORK_POLICY") == "1" {
		opts.SkipNetworkNone = "SKIPPED: the cluster's network plugin enforces no NetworkPolicies (SANDDUNE_K8S_NO_NETWORK_POLICY=1)"
	}
	sandboxtest.Run(t, kubernetes.New(), opts)
}

// TestNetworkPolicyRealCluster: network = "none" puts a NetworkPolicy
// denying all egress on exactly the sandbox's pod, and Close removes it
// with the pod.
func TestNetworkPolicyRealCluster(t *testing.T) {
	ctx := context.Background()
	cfg := e2eConfig(t, map[string]cty.Value{"network": cty.StringVal("none")})
	cs := clientset(t)
	p := kubernetes.New()
	sb, err := p.Create(ctx, sdk.CreateRequest{Config: sdk.Config{Value: cfg}, RunID: "netpol", RunName: "netpol", Labels: map[string]string{sdk.LabelSandbox: "e2e.netpol"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sb.Close(context.Background()) })
	ns, name, _ := strings.Cut(sb.Info().ID, "/")
	np, err := cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsForbidden(err) {
		// rbac.yaml's Role may create and delete policies, not read them.
		t.Logf("these credentials may not read NetworkPolicies: checked that Create and Close manage one, not its content")
		if err := sb.Close(ctx); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatalf("the sandbox's NetworkPolicy: %v", err)
	}
	if len(np.Spec.Egress) != 0 || len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != "Egress" {
		t.Errorf("policy %s allows egress: %+v", name, np.Spec)
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Name != name {
		t.Fatalf("policy selects %v (%v), want only pod %s", pods, err, name)
	}
	if err := sb.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		np, err := cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && np.DeletionTimestamp != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("NetworkPolicy %s/%s left after Close: %v", ns, name, err)
		}
	}
}

// TestEgressSidecarRealCluster: with a policy the pod holds the enforcer
// sidecar beside the sandbox container, with NET_ADMIN and root only
// there and the enforcer in a volume only it mounts (no hostPath); in the
// sandbox container no capability is left to undo the rules with, even
// by gaining root. A refusal of the sandbox's last command reaches
// WatchEgress, which returns once the sandbox is closed.
func TestEgressSidecarRealCluster(t *testing.T) {
	ctx := context.Background()
	cfg := e2eConfig(t, nil)
	host := os.Getenv("SANDDUNE_K8S_HOST_IP")
	if host == "" {
		t.Fatal("SANDDUNE_K8S_HOST_IP is not set: the address of this machine the cluster's pods reach (scripts/k8s-up.sh exports it)")
	}
	port := kittest.HelloListener(t, "0.0.0.0")
	cs := clientset(t)
	sb, err := kubernetes.New().Create(ctx, sdk.CreateRequest{
		Config: sdk.Config{Value: cfg}, RunID: "egress", RunName: "egress",
		Labels: map[string]string{sdk.LabelSandbox: "e2e.egress"},
		Egress: &sdk.EgressPolicy{Allow: []string{"allowed.test:1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = sb.Close(context.Background())
		}
	})
	ns, name, _ := strings.Cut(sb.Info().ID, "/")
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Containers) != 2 {
		t.Fatalf("want the sandbox and the egress sidecar, the pod has %d containers", len(pod.Spec.Containers))
	}
	sandbox, sidecar := pod.Spec.Containers[0], pod.Spec.Containers[1]
	if sidecar.Image != sandbox.Image {
		t.Errorf("the sidecar's image %s is not the sandbox's %s", sidecar.Image, sandbox.Image)
	}
	if sc := sidecar.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 0 || sc.Capabilities == nil ||
		!slices.Equal(sc.Capabilities.Add, []corev1.Capability{"NET_ADMIN"}) || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("the sidecar is not root with NET_ADMIN only: %+v", sidecar.SecurityContext)
	}
	if c := sandbox.SecurityContext.Capabilities; len(c.Add) != 0 {
		t.Errorf("the sandbox container adds capabilities: %v", c.Add)
	}
	for _, v := range pod.Spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("the pod mounts a hostPath: %+v", v)
		}
	}
	for _, m := range sandbox.VolumeMounts {
		if slices.ContainsFunc(sidecar.VolumeMounts, func(sm corev1.VolumeMount) bool { return sm.Name == m.Name }) {
			t.Errorf("the sandbox container mounts the sidecar's volume %s", m.Name)
		}
	}

	exec := func(script string) string {
		var out strings.Builder
		res, err := sb.Exec(ctx, sdk.ExecRequest{Argv: []string{"sh", "-c", script}}, func(l sdk.OutputLine) {
			if l.Stream == sdk.Stdout {
				out.Write(l.Text)
			}
		})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("Exec %q: %+v %v", script, res, err)
		}
		return strings.TrimSpace(out.String())
	}
	if got := exec(`grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status | awk '{print $2}' | sort -u`); got != "0000000000000000" {
		t.Errorf("the sandbox container has capabilities (CapEff, CapPrm, CapBnd): %s", got)
	}
	w := egresstest.Watch(t, sb)
	if got := exec(fmt.Sprintf(`timeout 10 bash -c 'exec 3<>/dev/tcp/%s/%d && head -n1 <&3' 2>/dev/null || echo refused`, host, port)); got != "refused" {
		t.Errorf("the unlisted %s:%d is reachable (%q)", host, port, got)
	}
	if err := sb.Close(ctx); err != nil {
		t.Fatal(err)
	}
	closed = true
	w.Expect(t, sdk.EgressDenial{Host: host, Port: port, Proto: "tcp"})
	w.Stop(t)
}

// TestEgressPodSecurityRealCluster: a namespace whose Pod Security level
// (baseline) refuses the sidecar fails Create with what to do: the
// namespace label to set. Needs credentials that may create namespaces
// (the admin pass).
func TestEgressPodSecurityRealCluster(t *testing.T) {
	ctx := context.Background()
	e2eConfig(t, nil) // skips without a cluster
	cs := clientset(t)
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "sanddune-e2e-psa-",
		Labels:       map[string]string{"app.kubernetes.io/managed-by": "sanddune-e2e", "pod-security.kubernetes.io/enforce": "baseline"},
	}}, metav1.CreateOptions{})
	if apierrors.IsForbidden(err) {
		t.Skip("SKIPPED: these credentials may not create namespaces (the admin pass checks this)")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespace(t, cs, ns) })
	cfg := e2eConfig(t, map[string]cty.Value{"namespace": cty.StringVal(ns.Name)})
	_, err = kubernetes.New().Create(ctx, sdk.CreateRequest{
		Config: sdk.Config{Value: cfg}, RunID: "psa", RunName: "psa",
		Labels: map[string]string{sdk.LabelSandbox: "e2e.psa"},
		Egress: &sdk.EgressPolicy{Allow: []string{"allowed.test"}},
	})
	want := "kubectl label namespace " + ns.Name + " pod-security.kubernetes.io/enforce=privileged"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "NET_ADMIN") {
		t.Fatalf("Create in a baseline namespace: %v, want it to say %q", err, want)
	}
	if l, err := cs.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("pods in %s after the refusal: %v %v", ns.Name, l, err)
	}
}

// deleteNamespace deletes an empty namespace of the test; with no
// namespace controller (k8s-up.sh runs none) it finalizes it itself.
func deleteNamespace(t *testing.T, cs *k8s.Clientset, ns *corev1.Namespace) {
	ctx := context.Background()
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("delete namespace %s: %v", ns.Name, err)
		return
	}
	cur, err := cs.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err == nil {
		cur.Spec.Finalizers = nil
		_, err = cs.CoreV1().Namespaces().Finalize(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("finalize namespace %s: %v", ns.Name, err)
	}
}

// clientset is a client of the e2e cluster as the suite's credentials.
func clientset(t *testing.T) *k8s.Clientset {
	t.Helper()
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), nil)
	rc, err := cc.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := k8s.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// e2eConfig is the sandbox block for the real cluster, plus extra
// attributes, or skips (fails with SANDDUNE_REQUIRE_ENGINES=1 and
// SANDDUNE_K8S_E2E=1) without one.
func e2eConfig(t *testing.T, extra map[string]cty.Value) cty.Value {
	t.Helper()
	if os.Getenv("SANDDUNE_K8S_E2E") != "1" {
		t.Skip("SKIPPED: no real cluster (set SANDDUNE_K8S_E2E=1 and KUBECONFIG, or run make e2e-k8s)")
	}
	if os.Getenv("KUBECONFIG") == "" {
		t.Fatal("SANDDUNE_K8S_E2E=1 needs KUBECONFIG")
	}
	image := os.Getenv("SANDDUNE_K8S_IMAGE")
	if image == "" {
		image = "sanddune-test-base:bookworm"
	}
	attrs := map[string]cty.Value{
		"image":             cty.StringVal(image),
		"image_pull_policy": cty.StringVal("IfNotPresent"),
	}
	if n := os.Getenv("SANDDUNE_K8S_NODE"); n != "" {
		attrs["node_name"] = cty.StringVal(n)
	}
	maps.Copy(attrs, extra)
	return cty.ObjectVal(attrs)
}
