package kubernetes_test

import (
	"os"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/plugins/kubernetes"
	"github.com/missingstudio/sanddune/sdk/sandboxtest"
)

// TestConformanceRealCluster runs the conformance kit against a real
// cluster: SANDDUNE_K8S_E2E=1 with KUBECONFIG pointing at it (make
// e2e-k8s starts one with scripts/k8s-up.sh). SANDDUNE_K8S_NODE pins the
// pod to a node for clusters without a scheduler; SANDDUNE_K8S_IMAGE is
// the image (default the test image, imported by k8s-up.sh).
func TestConformanceRealCluster(t *testing.T) {
	sandboxtest.Run(t, kubernetes.New(), sandboxtest.Options{Config: e2eConfig(t)})
}

// e2eConfig is the sandbox block for the real cluster, or skips (fails
// with SANDDUNE_REQUIRE_ENGINES=1 and SANDDUNE_K8S_E2E=1) without one.
func e2eConfig(t *testing.T) cty.Value {
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
	return cty.ObjectVal(attrs)
}
