package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/plugintest"
	"github.com/missingstudio/sanddune/sdk/sandboxtest"
)

// The conformance kit through a real gRPC connection, against client-go's
// fake clientset and a fake of the pods/exec WebSocket endpoint that runs
// the commands on this machine: exec, stdin, exit codes from the status
// channel, streaming, timeouts and cancellation (the kill exec), copies
// as tar over exec, close and recover.
func TestConformanceFakeCluster(t *testing.T) {
	t.Parallel()
	f := newFakeCluster(t)
	sandboxtest.Run(t, f.provider(), sandboxtest.Options{Config: fakeConfig(t, nil),
		SkipNetworkNone: "the fake cluster runs commands on this machine: no CNI enforces the NetworkPolicy (make e2e-k8s checks a real one)",
		SkipEgress:      "the fake cluster runs commands on this machine: no pod network namespace for the sidecar to enforce in (make e2e-k8s checks a real one)"})
}

func createReq(cfg cty.Value, run string) sdk.CreateRequest {
	return sdk.CreateRequest{
		Config:  sdk.Config{Value: cfg},
		RunID:   run,
		RunName: run,
		Env:     map[string]string{"API_KEY": "secret-value"},
		Labels: map[string]string{
			sdk.LabelRun: run, sdk.LabelSandbox: "sandbox.kubernetes.test",
			"sanddune.repo": "/home/me/repo", sdk.LabelPID: "123",
		},
	}
}

func TestPodSpecFakeCluster(t *testing.T) {
	t.Parallel()
	f := newFakeCluster(t)
	p := f.provider()
	ctx := context.Background()
	cfg := fakeConfig(t, map[string]cty.Value{
		"network":       cty.StringVal("none"),
		"cpu":           cty.StringVal("500m"),
		"memory":        cty.StringVal("1Gi"),
		"runtime_class": cty.StringVal("gvisor"),
		"node_selector": cty.MapVal(map[string]cty.Value{"pool": cty.StringVal("agents")}),
		"toleration": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"key": cty.StringVal("agents"), "operator": cty.StringVal("Exists"), "value": cty.NullVal(cty.String), "effect": cty.StringVal("NoSchedule"),
		})}),
	})
	sb, err := p.Create(ctx, createReq(cfg, "Run_1"))
	if err != nil {
		t.Fatal(err)
	}
	id := sb.Info().ID
	ns, name, _ := strings.Cut(id, "/")
	pod, err := f.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := pod.Spec.Containers[0]
	sc := c.SecurityContext
	switch {
	case !*sc.RunAsNonRoot || *sc.RunAsUser != 1000 || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem:
		t.Errorf("security context not restrictive: %+v", sc)
	case !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Errorf("capabilities/seccomp: %+v", sc)
	case *pod.Spec.AutomountServiceAccountToken:
		t.Error("service account token mounted by default")
	case *pod.Spec.RuntimeClassName != "gvisor" || pod.Spec.NodeSelector["pool"] != "agents" || len(pod.Spec.Tolerations) != 1:
		t.Errorf("scheduling: %+v", pod.Spec)
	case c.Resources.Limits.Cpu().String() != "500m" || c.Resources.Requests.Memory().String() != "1Gi":
		t.Errorf("resources: %+v", c.Resources)
	case pod.Labels["sanddune.dev/run"] != "Run_1" || pod.Labels[labelManagedBy] != managedBy:
		t.Errorf("labels: %v", pod.Labels)
	case requestLabels(pod.ObjectMeta)["sanddune.repo"] != "/home/me/repo":
		t.Errorf("request labels: %v", pod.Annotations)
	}
	for _, e := range c.Env {
		if strings.Contains(e.Value, "secret-value") {
			t.Error("an env value is in the pod spec")
		}
	}
	sec, err := f.client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || sec.StringData["API_KEY"] != "secret-value" || c.EnvFrom[0].SecretRef.Name != name {
		t.Errorf("env secret: %+v, %v", sec, err)
	}
	np, err := f.client.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || len(np.Spec.Egress) != 0 || np.Spec.PolicyTypes[0] != "Egress" || np.Spec.PodSelector.MatchLabels[labelSandbox] != name {
		t.Errorf("deny-egress policy: %+v, %v", np, err)
	}

	var deletes []string
	f.client.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		d := a.(k8stesting.DeleteAction)
		if d.GetDeleteOptions().PropagationPolicy == nil || *d.GetDeleteOptions().PropagationPolicy != metav1.DeletePropagationForeground {
			t.Errorf("delete %s without foreground propagation", d.GetResource().Resource)
		}
		deletes = append(deletes, d.GetResource().Resource)
		return false, nil, nil
	})
	if err := sb.Close(ctx); err != nil {
		t.Fatal(err)
	}
	slices.Sort(deletes)
	if !slices.Equal(deletes, []string{"networkpolicies", "pods", "secrets"}) {
		t.Errorf("Close deleted %v", deletes)
	}
	if l, _ := f.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("pods left after Close: %d", len(l.Items))
	}
}

// A pod that cannot start fails Create with the cluster's reason and is
// deleted; one that starts later is waited for through the watch.
func TestStartFakeCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		status  func(*corev1.Pod)
		wantErr string
	}{
		{"ImagePull", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: containerName, State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}}}
		}, "the image cannot be pulled: ErrImagePull: not found"},
		{"Running", setRunning, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeCluster(t)
			f.hold = true
			p := f.provider()
			go func() { // once Create watches the pod (the fake replays no missed events)
				for {
					watching := slices.ContainsFunc(f.client.Actions(), func(a k8stesting.Action) bool {
						return a.GetVerb() == "watch" && a.GetResource().Resource == "pods"
					})
					l, _ := f.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
					if watching && len(l.Items) > 0 {
						pod := l.Items[0]
						tc.status(&pod)
						_, _ = f.client.CoreV1().Pods("default").UpdateStatus(ctx, &pod, metav1.UpdateOptions{})
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
			}()
			sb, err := p.Create(ctx, createReq(fakeConfig(t, nil), "start"))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				_ = sb.Close(ctx)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Create: %v, want %q", err, tc.wantErr)
			}
			if l, _ := f.client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
				t.Error("the failed pod was not deleted")
			}
		})
	}
}

// With max_concurrent = 1 a second Create waits for the first sandbox to
// close and reports that it is queued, behind what, and when it leaves the
// queue (through the plugin protocol, as the host shows them); a cancelled
// wait leaves the queue.
func TestMaxConcurrentQueuesFakeCluster(t *testing.T) {
	t.Parallel()
	f := newFakeCluster(t)
	p := plugintest.Sandbox(t, f.provider())
	ctx := context.Background()
	cfg := fakeConfig(t, map[string]cty.Value{"max_concurrent": cty.NumberIntVal(1)})
	// create starts a Create whose progress reports arrive on a channel.
	create := func(ctx context.Context, run string) (<-chan sdk.Progress, <-chan error) {
		progress, done := make(chan sdk.Progress, 10), make(chan error, 1)
		req := createReq(cfg, run)
		req.Progress = func(pr sdk.Progress) { progress <- pr }
		go func() {
			sb, err := p.Create(ctx, req)
			if err == nil {
				err = sb.Close(context.Background())
			}
			done <- err
		}()
		return progress, done
	}
	firstProgress := make(chan sdk.Progress, 10)
	req := createReq(cfg, "first")
	req.Progress = func(pr sdk.Progress) { firstProgress <- pr }
	firstSB, err := p.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(firstProgress) != 0 {
		t.Errorf("the first run, which did not wait, reported %+v", <-firstProgress)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancelledProgress, cancelled := create(cctx, "cancelled")
	want := sdk.Progress{Waiting: true, Message: "queued behind 1 running pod (max_concurrent 1)"}
	if got := <-cancelledProgress; got != want {
		t.Errorf("queued run reported %+v, want %+v", got, want)
	}
	secondProgress, second := create(ctx, "second")
	want = sdk.Progress{Waiting: true, Message: "queued behind 1 running pod and 1 queued run (max_concurrent 1)"}
	if got := <-secondProgress; got != want {
		t.Errorf("second queued run reported %+v, want %+v", got, want)
	}
	select {
	case err := <-second:
		t.Fatalf("second Create returned while the first sandbox is open: %v", err)
	default:
	}
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled wait: %v", err)
	}
	if err := firstSB.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatalf("second Create after the first closed: %v", err)
	}
	if got := <-secondProgress; got.Waiting || !strings.HasPrefix(got.Message, "left the queue after ") {
		t.Errorf("second run, out of the queue, reported %+v", got)
	}
	if len(secondProgress) != 0 || len(cancelledProgress) != 0 {
		t.Errorf("more reports than queued and left: %d, %d", len(secondProgress), len(cancelledProgress))
	}
}

func TestPreflightFakeCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFakeCluster(t)
	p := f.provider()
	cfg := sdk.Config{Value: fakeConfig(t, map[string]cty.Value{"network": cty.StringVal("none")})}
	if err := p.Preflight(ctx, sdk.PreflightRequest{Config: cfg}); err != nil {
		t.Fatalf("Preflight with every permission: %v", err)
	}
	f.client.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		ra := r.Spec.ResourceAttributes
		r.Status.Allowed = ra.Subresource != "exec" && ra.Resource != "networkpolicies"
		return true, r, nil
	})
	err := p.Preflight(ctx, sdk.PreflightRequest{Config: cfg})
	if err == nil || !strings.Contains(err.Error(), "create pods/exec") || !strings.Contains(err.Error(), "create networkpolicies.networking.k8s.io") || !strings.Contains(err.Error(), "rbac.yaml") {
		t.Errorf("Preflight without pods/exec and networkpolicies: %v", err)
	}

	g := newFakeCluster(t)
	_, _ = g.client.CoreV1().ResourceQuotas("default").Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "agents"},
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{corev1.ResourcePods: resourceOne},
			Used: corev1.ResourceList{corev1.ResourcePods: resourceOne},
		},
	}, metav1.CreateOptions{})
	if err := g.provider().Preflight(ctx, sdk.PreflightRequest{Config: cfg}); err == nil || !strings.Contains(err.Error(), "ResourceQuota default/agents has no room") {
		t.Errorf("Preflight with a full quota: %v", err)
	}

	never := sdk.Config{Value: fakeConfig(t, map[string]cty.Value{"image_pull_policy": cty.StringVal("Never")})}
	h := newFakeCluster(t)
	_, _ = h.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}}, metav1.CreateOptions{})
	if err := h.provider().Preflight(ctx, sdk.PreflightRequest{Config: never}); err == nil || !strings.Contains(err.Error(), `is not present on node(s) node1 and image_pull_policy is "Never"`) {
		t.Errorf("Preflight with a missing image: %v", err)
	}
}

// Preflight says what it could not check: whether the image is on the
// nodes (and that pulling is only tried when the pod starts), and whether
// a network plugin enforces the NetworkPolicy of network = "none".
func TestPreflightSaysWhatItCannotCheckFakeCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	preflight := func(f *fakeCluster, attrs map[string]cty.Value) string {
		t.Helper()
		var buf bytes.Buffer
		p := f.provider()
		p.log = hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info})
		if err := p.Preflight(ctx, sdk.PreflightRequest{Config: sdk.Config{Value: fakeConfig(t, attrs)}}); err != nil {
			t.Fatalf("Preflight(%v): %v", attrs, err)
		}
		return buf.String()
	}
	none := map[string]cty.Value{"network": cty.StringVal("none")}

	f := newFakeCluster(t)
	f.client.PrependReactor("*", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("nodes"), "", errors.New("RBAC: a Role grants no nodes"))
	})
	if out := preflight(f, none); !strings.Contains(out, "[WARN]") || !strings.Contains(out, "none was found among the cluster's API groups") {
		t.Errorf("network none without a policy-enforcing plugin: %q", out)
	}
	if out := preflight(f, nil); !strings.Contains(out, "may not read nodes") || !strings.Contains(out, "pulls it when the pod starts") {
		t.Errorf("no nodes readable: %q", out)
	}
	if out := preflight(f, map[string]cty.Value{"image_pull_policy": cty.StringVal("Never")}); !strings.Contains(out, "[WARN]") || !strings.Contains(out, "cannot start without it") {
		t.Errorf(`nodes unreadable, image_pull_policy "Never": %q`, out)
	}

	g := newFakeCluster(t)
	g.client.Resources = []*metav1.APIResourceList{{GroupVersion: "cilium.io/v2"}}
	_, _ = g.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1"}, Status: corev1.NodeStatus{
		Images: []corev1.ContainerImage{{Names: []string{"docker.io/library/sanddune-test-base:bookworm"}}},
	}}, metav1.CreateOptions{})
	_, _ = g.client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node2"}}, metav1.CreateOptions{})
	out := preflight(g, none)
	if strings.Contains(out, "[WARN]") || !strings.Contains(out, "NetworkPolicies are enforced: by=Cilium") {
		t.Errorf("network none with Cilium: %q", out)
	}
	if !strings.Contains(out, "image present") || !strings.Contains(out, `nodes=["node1"]`) {
		t.Errorf("image on node1: %q", out)
	}
	if out := preflight(g, map[string]cty.Value{"image": cty.StringVal("ghcr.io/acme/agent:1")}); !strings.Contains(out, "image is on none of the nodes: the kubelet pulls it when the pod starts") {
		t.Errorf("image on no node: %q", out)
	}
}

func TestConfigDiagnostics(t *testing.T) {
	t.Parallel()
	for attr, v := range map[string]cty.Value{
		"image_pull_policy": cty.StringVal("Sometimes"),
		"cpu":               cty.StringVal("lots"),
		"namespace":         cty.StringVal("Not_A_Namespace"),
		"network":           cty.StringVal("bridge"),
		"max_concurrent":    cty.NumberIntVal(0),
		"run_as_user":       cty.NumberIntVal(0),
		"workdir":           cty.StringVal("relative"),
		"deadline":          cty.StringVal("soon"),
	} {
		_, diags := decodeConfig(sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"image": cty.StringVal("x"), attr: v})})
		if !diags.HasErrors() || diags[0].Attribute != attr {
			t.Errorf("%s = %#v: diagnostics %v, want one on the attribute", attr, v, diags)
		}
	}
	if _, diags := decodeConfig(sdk.Config{Value: cty.EmptyObjectVal}); !diags.HasErrors() || diags[0].Attribute != "image" {
		t.Errorf("missing image: %v", diags)
	}
}

// On a machine with no kubeconfig and outside any cluster, `sanddune gc`
// has nothing to list here: that is no error.
func TestListResourcesWithoutAnyCluster(t *testing.T) {
	t.Setenv("KUBECONFIG", t.TempDir()+"/none")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	p := New().(sdk.ResourceLister)
	res, err := p.ListResources(context.Background(), sdk.Config{})
	if err != nil || len(res) != 0 {
		t.Fatalf("ListResources = %v, %v; want nothing and no error", res, err)
	}
}

// `sanddune gc` lists, recovers and removes a block's sandboxes with the
// block's config: where the credentials may not list pods in all
// namespaces, it looks in the block's namespace, which the defaults (the
// context's namespace) miss.
func TestResourcesInTheBlocksNamespaceFakeCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFakeCluster(t)
	f.client.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == metav1.NamespaceAll {
			return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("cluster-wide list not allowed"))
		}
		return false, nil, nil
	})
	block := fakeConfig(t, map[string]cty.Value{"namespace": cty.StringVal("team")})
	sb, err := f.provider().Create(ctx, createReq(block, "ns"))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close(ctx)
	id := sb.Info().ID // namespace/pod
	ns, pod, _ := strings.Cut(id, "/")
	if ns != "team" {
		t.Fatalf("the sandbox pod is %s, want it in namespace team", id)
	}

	gc := f.provider() // gc relaunches the plugin: it knows no cluster yet
	if res, err := gc.ListResources(ctx, sdk.Config{}); err != nil || len(res) != 0 {
		t.Fatalf("ListResources with the defaults = %v, %v; want nothing (they look in namespace default)", res, err)
	}
	cfg := sdk.Config{Value: block}
	res, err := gc.ListResources(ctx, cfg)
	if err != nil || len(res) != 1 || res[0].ID != id || res[0].Labels[sdk.LabelRun] != "ns" || res[0].Labels[sdk.LabelSandbox] != "sandbox.kubernetes.test" {
		t.Fatalf("ListResources with the block's config = %+v, %v; want %s with its labels", res, err, id)
	}
	rec, err := gc.Recover(ctx, cfg, id)
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	_ = rec.Close(ctx)
	if err := gc.RemoveResource(ctx, cfg, id); err != nil {
		t.Fatalf("RemoveResource: %v", err)
	}
	if _, err := f.client.CoreV1().Pods("team").Get(ctx, pod, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pod is still there after RemoveResource: %v", err)
	}
}

// A pod with the egress sidecar is started once both containers run, and
// fails naming the sidecar when it cannot start; gc (Recover) needs only
// the sandbox container running, whatever became of the sidecar.
func TestPodStartedWithEgressSidecar(t *testing.T) {
	t.Parallel()
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	for _, tc := range []struct {
		name    string
		sidecar corev1.ContainerState
		started bool
		err     string
	}{
		{"both running", running, true, ""},
		{"sidecar creating", corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}, false, ""},
		{"sidecar exited", corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}, false, "the egress sidecar exited (Error, code 1)"},
		{"sidecar image", corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}, false, "the egress sidecar: the image cannot be pulled: ErrImagePull"},
	} {
		pod := &corev1.Pod{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: containerName}, {Name: egressContainer}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
				{Name: containerName, State: running}, {Name: egressContainer, State: tc.sidecar},
			}},
		}
		started, err := podStarted(pod)
		if started != tc.started || (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Errorf("%s: podStarted = %v, %v; want %v, %q", tc.name, started, err, tc.started, tc.err)
		}
		if started, err := sandboxStarted(pod); !started || err != nil {
			t.Errorf("%s: sandboxStarted = %v, %v; want true", tc.name, started, err)
		}
	}
}
