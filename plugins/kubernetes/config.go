package kubernetes

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

func schema() sdk.Schema {
	return sdk.Schema{
		Attributes: []sdk.Attribute{
			{Name: "image", Type: cty.String, Required: true, Description: "Image of the sandbox pod; it needs sh, setsid, kill, tar and git."},
			{Name: "namespace", Type: cty.String, Description: `Namespace of the pods; default the kubeconfig context's, else "default".`},
			{Name: "kubeconfig", Type: cty.String, Description: "Kubeconfig file; default $KUBECONFIG, ~/.kube/config, then in-cluster config."},
			{Name: "context", Type: cty.String, Description: "Kubeconfig context; default the current one."},
			{Name: "image_pull_policy", Type: cty.String, Description: `"Always", "IfNotPresent" or "Never"; default the cluster's.`},
			{Name: "cpu", Type: cty.String, Description: `CPU request and limit, e.g. "2" or "500m".`},
			{Name: "memory", Type: cty.String, Description: `Memory request and limit, e.g. "4Gi".`},
			{Name: "ephemeral_storage", Type: cty.String, Description: `Ephemeral storage request and limit, e.g. "20Gi".`},
			{Name: "runtime_class", Type: cty.String, Description: "runtimeClassName, e.g. gvisor or kata."},
			{Name: "node_selector", Type: cty.Map(cty.String), Description: "Node labels the pod must run on."},
			{Name: "node_name", Type: cty.String, Description: "Node to run on, bypassing the scheduler (clusters without one)."},
			{Name: "service_account", Type: cty.String, Description: "Service account of the pod."},
			{Name: "automount_service_account_token", Type: cty.Bool, Default: cty.False, Description: "Mount the service account token into the pod."},
			{Name: "run_as_user", Type: cty.Number, Default: cty.NumberIntVal(1000), Description: "UID the pod runs as (never 0)."},
			{Name: "run_as_group", Type: cty.Number, Default: cty.NumberIntVal(1000), Description: "GID the pod runs as, and its fsGroup."},
			{Name: "read_only_root", Type: cty.Bool, Default: cty.True, Description: "Read-only root filesystem; workdir, home and /tmp stay writable."},
			{Name: "workdir", Type: cty.String, Default: cty.StringVal("/workspace"), Description: "Repository path in the pod."},
			{Name: "home", Type: cty.String, Default: cty.StringVal("/home/sanddune"), Description: "HOME in the pod."},
			{Name: "network", Type: cty.String, Description: `"none" adds a NetworkPolicy denying all egress (needs a CNI that enforces policies).`},
			{Name: "env", Type: cty.Map(cty.String), Description: "Environment for every command (kept in a Secret owned by the run)."},
			{Name: "max_concurrent", Type: cty.Number, Description: "At most this many sandboxes of this block at once per sanddune process; more runs queue."},
			{Name: "start_timeout", Type: cty.String, Default: cty.StringVal("5m"), Description: "How long a pod may take to start running."},
			{Name: "deadline", Type: cty.String, Description: "activeDeadlineSeconds backstop: the cluster kills the pod after this long."},
			{Name: "qps", Type: cty.Number, Default: cty.NumberIntVal(50), Description: "Client-side API rate limit (requests per second)."},
			{Name: "burst", Type: cty.Number, Default: cty.NumberIntVal(100), Description: "Client-side API burst."},
		},
		Blocks: []sdk.NestedBlock{{
			TypeName:    "toleration",
			Nesting:     sdk.NestingList,
			Description: "A pod toleration.",
			Body: sdk.Schema{Attributes: []sdk.Attribute{
				{Name: "key", Type: cty.String},
				{Name: "operator", Type: cty.String, Description: `"Equal" (default) or "Exists".`},
				{Name: "value", Type: cty.String},
				{Name: "effect", Type: cty.String, Description: `"NoSchedule", "PreferNoSchedule" or "NoExecute"; empty matches all.`},
			}},
		}},
	}
}

// config is a decoded, validated provider block.
type config struct {
	Image, Namespace, Kubeconfig, Context string
	PullPolicy                            corev1.PullPolicy
	Resources                             corev1.ResourceList
	RuntimeClass                          string
	NodeSelector                          map[string]string
	NodeName                              string
	ServiceAccount                        string
	AutomountToken                        bool
	UID, GID                              int64
	ReadOnlyRoot                          bool
	Workdir, Home                         string
	NetworkNone                           bool
	Env                                   map[string]string
	MaxConcurrent                         int
	StartTimeout, Deadline                time.Duration
	QPS                                   float32
	Burst                                 int
	Tolerations                           []corev1.Toleration
}

// decodeConfig decodes and validates a block. Missing and null attributes
// take their defaults, so partial objects (tests) work.
func decodeConfig(cfg sdk.Config) (config, sdk.Diagnostics) {
	var d sandboxkit.Decoder
	v := cfg.Value
	c := config{
		Image:          d.String(v, "image"),
		Namespace:      d.String(v, "namespace"),
		Kubeconfig:     d.String(v, "kubeconfig"),
		Context:        d.String(v, "context"),
		PullPolicy:     corev1.PullPolicy(d.String(v, "image_pull_policy")),
		RuntimeClass:   d.String(v, "runtime_class"),
		NodeSelector:   d.StringMap(v, "node_selector"),
		NodeName:       d.String(v, "node_name"),
		ServiceAccount: d.String(v, "service_account"),
		AutomountToken: d.Bool(v, "automount_service_account_token"),
		ReadOnlyRoot:   true,
		Workdir:        "/workspace",
		Home:           "/home/sanddune",
		Env:            d.Env(v, "env"),
		StartTimeout:   5 * time.Minute,
		UID:            1000,
		GID:            1000,
		QPS:            50,
		Burst:          100,
	}
	if c.Image == "" {
		d.Errorf("image", "missing image", "the kubernetes sandbox needs an image with sh, setsid, kill, tar and git")
	} else if strings.ContainsAny(c.Image, " \t\n") {
		d.Errorf("image", "invalid image name", "%q contains whitespace", c.Image)
	}
	if c.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(c.Namespace) {
			d.Errorf("namespace", "invalid namespace", "%q: %s", c.Namespace, msg)
		}
	}
	switch c.PullPolicy {
	case "", corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	default:
		d.Errorf("image_pull_policy", "invalid image_pull_policy", `%q: use "Always", "IfNotPresent" or "Never"`, c.PullPolicy)
	}
	for attr, name := range map[string]corev1.ResourceName{"cpu": corev1.ResourceCPU, "memory": corev1.ResourceMemory, "ephemeral_storage": corev1.ResourceEphemeralStorage} {
		s := d.String(v, attr)
		if s == "" {
			continue
		}
		q, err := resource.ParseQuantity(s)
		if err != nil || q.Sign() <= 0 {
			d.Errorf(attr, "invalid "+attr, "%q is not a positive Kubernetes quantity", s)
			continue
		}
		if c.Resources == nil {
			c.Resources = corev1.ResourceList{}
		}
		c.Resources[name] = q
	}
	if a := sandboxkit.Attr(v, "read_only_root"); !a.IsNull() {
		c.ReadOnlyRoot = d.Bool(v, "read_only_root")
	}
	for _, attr := range []string{"workdir", "home"} {
		p := d.String(v, attr)
		if p == "" {
			continue
		}
		if !path.IsAbs(p) || path.Clean(p) != p || p == "/" {
			d.Errorf(attr, "invalid "+attr, "%q must be a clean absolute path below /", p)
		}
		if attr == "workdir" {
			c.Workdir = p
		} else {
			c.Home = p
		}
	}
	if sandboxkit.Within(c.Workdir, c.Home) || sandboxkit.Within(c.Home, c.Workdir) {
		d.Errorf("home", "home and workdir overlap", "%q and %q must not contain one another", c.Home, c.Workdir)
	}
	switch n := d.String(v, "network"); n {
	case "":
	case "none":
		c.NetworkNone = true
	default:
		d.Errorf("network", "invalid network", `%q: only "none" is supported (pods otherwise get the cluster's network)`, n)
	}
	if n, ok := d.Int(v, "max_concurrent"); ok {
		if n < 1 {
			d.Errorf("max_concurrent", "invalid max_concurrent", "must be at least 1")
		}
		c.MaxConcurrent = int(n)
	}
	for attr, dst := range map[string]*time.Duration{"start_timeout": &c.StartTimeout, "deadline": &c.Deadline} {
		s := d.String(v, attr)
		if s == "" {
			continue
		}
		dur, err := time.ParseDuration(s)
		if err != nil || dur < time.Second {
			d.Errorf(attr, "invalid "+attr, `%q: use a duration of at least 1s, e.g. "90s" or "2h"`, s)
			continue
		}
		*dst = dur
	}
	for attr, dst := range map[string]*int64{"run_as_user": &c.UID, "run_as_group": &c.GID} {
		n, ok := d.Int(v, attr)
		if !ok {
			continue
		}
		if n < 0 || n > 1<<31-1 || (attr == "run_as_user" && n == 0) {
			d.Errorf(attr, "invalid "+attr, "%d: use a non-root id", n)
			continue
		}
		*dst = n
	}
	if n, ok := d.Int(v, "qps"); ok && n > 0 {
		c.QPS = float32(n)
	}
	if n, ok := d.Int(v, "burst"); ok && n > 0 {
		c.Burst = int(n)
	}
	c.Tolerations = decodeTolerations(&d, v)
	return c, d.Diags
}

func decodeTolerations(d *sandboxkit.Decoder, v cty.Value) []corev1.Toleration {
	list := sandboxkit.Attr(v, "toleration")
	if list.IsNull() || !list.CanIterateElements() {
		return nil
	}
	var out []corev1.Toleration
	for it := list.ElementIterator(); it.Next(); {
		k, e := it.Element()
		i, _ := k.AsBigFloat().Int64()
		sub := sandboxkit.Decoder{Prefix: fmt.Sprintf("toleration.%d.", i)}
		t := corev1.Toleration{
			Key:      sub.String(e, "key"),
			Operator: corev1.TolerationOperator(sub.String(e, "operator")),
			Value:    sub.String(e, "value"),
			Effect:   corev1.TaintEffect(sub.String(e, "effect")),
		}
		switch t.Operator {
		case "", corev1.TolerationOpEqual, corev1.TolerationOpExists:
		default:
			sub.Errorf("operator", "invalid operator", `%q: use "Equal" or "Exists"`, t.Operator)
		}
		switch t.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			sub.Errorf("effect", "invalid effect", `%q: use "NoSchedule", "PreferNoSchedule" or "NoExecute"`, t.Effect)
		}
		d.Diags = append(d.Diags, sub.Diags...)
		out = append(out, t)
	}
	return out
}
