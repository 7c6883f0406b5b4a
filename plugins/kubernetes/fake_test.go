package kubernetes

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/zclconf/go-cty/cty"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
)

// fakeCluster is client-go's fake clientset, whose pods start running as
// soon as they are created (unless held), plus a fake of the pods/exec
// endpoint (the WebSocket v5 channel protocol, as the apiserver serves
// it) that runs the requested command on this machine with the pod's
// environment, like a kubelet would in the container.
type fakeCluster struct {
	client *fake.Clientset
	srv    *httptest.Server

	mu   sync.Mutex
	hold bool // pods stay Pending
}

func newFakeCluster(t *testing.T) *fakeCluster {
	t.Helper()
	f := &fakeCluster{client: fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})}
	f.client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pod := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		f.mu.Lock()
		hold := f.hold
		f.mu.Unlock()
		if !hold {
			setRunning(pod)
		}
		return false, nil, nil
	})
	f.client.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = true
		return true, r, nil
	})
	f.srv = httptest.NewServer(http.HandlerFunc(f.serveExec))
	t.Cleanup(f.srv.Close)
	return f
}

func setRunning(pod *corev1.Pod) {
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name:  containerName,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
	}}
}

// provider returns a provider whose every cluster is f.
func (f *fakeCluster) provider() *Provider {
	return newProvider(func(config) (*cluster, error) {
		return &cluster{client: f.client, rest: &rest.Config{Host: f.srv.URL}, namespace: "default"}, nil
	})
}

// serveExec serves GET /api/v1/namespaces/NS/pods/POD/exec over the v5
// channel protocol: channel 0 stdin, 1 stdout, 2 stderr, 3 the status
// (a metav1.Status; a non-zero exit is reason NonZeroExitCode with an
// ExitCode cause), 4 resize. A client that goes away does not stop the
// command, as with a real kubelet.
func (f *fakeCluster) serveExec(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) != 7 || parts[0] != "api" || parts[4] != "pods" || parts[6] != "exec" || !wsstream.IsWebSocketRequest(r) {
		http.Error(w, "not a pods/exec upgrade: "+r.Method+" "+r.URL.Path, http.StatusBadRequest)
		return
	}
	pod, err := f.client.CoreV1().Pods(parts[3]).Get(r.Context(), parts[5], metav1.GetOptions{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	argv := q["command"]

	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		"v5.channel.k8s.io": {Binary: true, Channels: []wsstream.ChannelType{
			wsstream.ReadChannel, wsstream.WriteChannel, wsstream.WriteChannel, wsstream.WriteChannel, wsstream.IgnoreChannel,
		}},
	})
	_, streams, err := conn.Open(w, r)
	if err != nil {
		return
	}
	defer conn.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = f.podEnv(r, pod)
	if q.Get("stdin") == "true" {
		cmd.Stdin = streams[0]
	}
	cmd.Stdout, cmd.Stderr = streams[1], streams[2]
	status := metav1.Status{Status: metav1.StatusSuccess}
	if err := cmd.Run(); err != nil {
		status = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code := exit.ExitCode()
			if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal()) // as a shell reports it
			}
			status.Reason = "NonZeroExitCode"
			status.Details = &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: "ExitCode", Message: strconv.Itoa(code)}}}
		}
	}
	b, _ := json.Marshal(status)
	_, _ = streams[3].Write(b)
}

// podEnv is the container's environment: PATH, the env of the pod spec
// and the Secrets it reads with envFrom.
func (f *fakeCluster) podEnv(r *http.Request, pod *corev1.Pod) []string {
	env := []string{"PATH=" + os.Getenv("PATH")}
	c := pod.Spec.Containers[0]
	for _, from := range c.EnvFrom {
		s, err := f.client.CoreV1().Secrets(pod.Namespace).Get(r.Context(), from.SecretRef.Name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		for k, v := range s.StringData {
			env = append(env, k+"="+v)
		}
		for k, v := range s.Data {
			env = append(env, k+"="+string(v))
		}
	}
	for _, e := range c.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	return env
}

// fakeConfig is a block for the fake cluster: workdir and home are host
// directories, since the fake exec runs commands on this machine.
func fakeConfig(t *testing.T, extra map[string]cty.Value) cty.Value {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"workdir", "home"} {
		if err := os.Mkdir(root+"/"+d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	attrs := map[string]cty.Value{
		"image":   cty.StringVal("sanddune-test-base:bookworm"),
		"workdir": cty.StringVal(root + "/workdir"),
		"home":    cty.StringVal(root + "/home"),
	}
	for k, v := range extra {
		attrs[k] = v
	}
	return cty.ObjectVal(attrs)
}
