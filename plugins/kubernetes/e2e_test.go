package kubernetes_test

import (
	"context"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/missingstudio/sanddune/internal/egress/egresstest"
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
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), nil)
	rc, err := cc.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := k8s.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
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
