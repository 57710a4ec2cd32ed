// Command kubecheck decodes every object of a rendered Helm chart (the
// output of `helm template`, on standard input) strictly into its
// Kubernetes API type, so a misspelt or misplaced field, or a kind or API
// version the types do not know, fails, then checks what the platform's
// deployment relies on: probes on the routes the platform serves, a
// non-root read-only container, selectors that match the pods, and the
// settings it passes being ones the platform reads (-settings, the
// generated docs/configuration.md).
//
// It is its own module so that the Kubernetes types stay out of the
// platform's dependencies; scripts/test.sh runs it in its lint stage.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

func main() {
	settings := flag.String("settings", "", "docs/configuration.md: every PLATFORM_ and OTEL_ variable passed must be listed there")
	want := flag.String("want", "", "comma-separated kinds that must be present, such as Deployment,Service")
	flag.Parse()
	known := map[string]bool{}
	if *settings != "" {
		b, err := os.ReadFile(*settings)
		if err != nil {
			fail(err)
		}
		for _, m := range regexp.MustCompile("`((?:PLATFORM|OTEL)_[A-Z0-9_]+)`").FindAllStringSubmatch(string(b), -1) {
			known[m[1]] = true
		}
	}
	objs, err := decodeAll(os.Stdin)
	if err != nil {
		fail(err)
	}
	problems := check(objs, known)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.kind]++
	}
	if *want != "" {
		for _, k := range strings.Split(*want, ",") {
			if kinds[k] == 0 {
				problems = append(problems, fmt.Sprintf("no %s rendered", k))
			}
		}
	}
	var names []string
	for k, n := range kinds {
		names = append(names, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(names)
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "kubecheck:", p)
		}
		os.Exit(1)
	}
	fmt.Printf("kubecheck: %d objects decoded strictly and checked (%s)\n", len(objs), strings.Join(names, " "))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "kubecheck:", err)
	os.Exit(1)
}

type object struct {
	kind, name, source string
	value              any
}

// types maps apiVersion/kind to a fresh value of its API type.
var types = map[string]func() any{
	"v1/ConfigMap":                            func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                               func() any { return &corev1.Secret{} },
	"v1/Service":                              func() any { return &corev1.Service{} },
	"v1/ServiceAccount":                       func() any { return &corev1.ServiceAccount{} },
	"apps/v1/Deployment":                      func() any { return &appsv1.Deployment{} },
	"policy/v1/PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"autoscaling/v2/HorizontalPodAutoscaler":  func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return &monitoringv1.ServiceMonitor{} },
}

var sourceLine = regexp.MustCompile(`(?m)^# Source: (.+)$`)

// decodeAll splits a multi-document stream and decodes each non-empty
// document into its type, refusing unknown and duplicate fields.
func decodeAll(r io.Reader) ([]object, error) {
	raw, err := io.ReadAll(bufio.NewReader(r))
	if err != nil {
		return nil, err
	}
	var objs []object
	var errs []error
	for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(raw), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		src := "?"
		if m := sourceLine.FindStringSubmatch(doc); m != nil {
			src = m[1]
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", src, err))
			continue
		}
		mk, ok := types[head.APIVersion+"/"+head.Kind]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %s %s is not a type this check knows", src, head.APIVersion, head.Kind))
			continue
		}
		v := mk()
		if err := yaml.UnmarshalStrict([]byte(doc), v); err != nil {
			errs = append(errs, fmt.Errorf("%s (%s %s): %w", src, head.Kind, head.Metadata.Name, err))
			continue
		}
		if head.Metadata.Name == "" {
			errs = append(errs, fmt.Errorf("%s: %s without metadata.name", src, head.Kind))
		}
		objs = append(objs, object{kind: head.Kind, name: head.Metadata.Name, source: src, value: v})
	}
	return objs, errors.Join(errs...)
}

func stripComments(doc string) string {
	var b bytes.Buffer
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// check holds what the platform needs of the objects.
func check(objs []object, known map[string]bool) []string {
	var p problems
	configMaps := map[string]*corev1.ConfigMap{}
	var deps []*appsv1.Deployment
	for _, o := range objs {
		switch v := o.value.(type) {
		case *corev1.ConfigMap:
			configMaps[v.Name] = v
		case *appsv1.Deployment:
			deps = append(deps, v)
		}
	}
	if len(deps) == 0 {
		p.add("no Deployment")
	}
	for _, d := range deps {
		p.checkDeployment(d, configMaps, known)
	}
	for _, o := range objs {
		p.checkCompanion(o.value, deps)
	}
	return p
}

// problems are what check found, in the order found.
type problems []string

func (p *problems) add(f string, a ...any) { *p = append(*p, fmt.Sprintf(f, a...)) }

// requiredSettings are the settings every platform container is given.
var requiredSettings = []string{"PLATFORM_EVENTSTORE_URL", "PLATFORM_POSTGRES_URL", "PLATFORM_MASTER_KEY", "PLATFORM_ADMIN_TOKEN", "PLATFORM_INTERNAL_TOKEN", "PLATFORM_NODE_ID", "PLATFORM_ADDR", "PLATFORM_DATA_DIR"}

// checkDeployment checks a Deployment's selector, replicas and pod
// security, then each of its containers.
func (p *problems) checkDeployment(d *appsv1.Deployment, configMaps map[string]*corev1.ConfigMap, known map[string]bool) {
	pod := d.Spec.Template
	sel := labels.SelectorFromSet(d.Spec.Selector.MatchLabels)
	if !sel.Matches(labels.Set(pod.Labels)) {
		p.add("Deployment %s: its selector does not match its pods' labels", d.Name)
	}
	if d.Spec.Replicas != nil && *d.Spec.Replicas < 2 {
		p.add("Deployment %s: %d replica(s); the shared-store topology runs at least 2", d.Name, *d.Spec.Replicas)
	}
	ps := pod.Spec.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot {
		p.add("Deployment %s: the pod does not require a non-root user", d.Name)
	}
	for _, c := range pod.Spec.Containers {
		where := "Deployment " + d.Name + " container " + c.Name
		p.checkContainer(where, c)
		vars := p.containerSettings(where, c, configMaps)
		for _, need := range requiredSettings {
			if !vars[need] {
				p.add("%s: %s is not set", where, need)
			}
		}
		if len(known) > 0 {
			for v := range vars {
				if !known[v] {
					p.add("%s: %s is not a setting the platform reads (docs/configuration.md)", where, v)
				}
			}
		}
	}
}

// checkContainer checks a container's probes, security context,
// resource requests and data volume.
func (p *problems) checkContainer(where string, c corev1.Container) {
	p.checkProbe(where, "readiness", c.ReadinessProbe, "/readyz")
	p.checkProbe(where, "liveness", c.LivenessProbe, "/healthz")
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		p.add("%s: root filesystem is writable", where)
	}
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		p.add("%s: privilege escalation allowed", where)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		p.add("%s: no CPU or memory request", where)
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		mounted = mounted || m.MountPath == "/data"
	}
	if !mounted {
		p.add("%s: /data (PLATFORM_DATA_DIR) is not a writable volume", where)
	}
}

// checkProbe checks that a probe is an HTTP GET of path on the
// platform's port.
func (p *problems) checkProbe(where, what string, pr *corev1.Probe, path string) {
	if pr == nil || pr.HTTPGet == nil {
		p.add("%s: no HTTP %s probe", where, what)
		return
	}
	if pr.HTTPGet.Path != path {
		p.add("%s: %s probe on %s, the platform serves it on %s", where, what, pr.HTTPGet.Path, path)
	}
	if pr.HTTPGet.Port.String() != "http" && pr.HTTPGet.Port.IntValue() != 8080 {
		p.add("%s: %s probe on port %s, not the platform's", where, what, pr.HTTPGet.Port.String())
	}
}

// containerSettings returns the settings a container is given, by env
// or from its ConfigMaps, flagging secrets given in the clear and
// ConfigMaps that are not rendered.
func (p *problems) containerSettings(where string, c corev1.Container, configMaps map[string]*corev1.ConfigMap) map[string]bool {
	vars := map[string]bool{}
	for _, e := range c.Env {
		vars[e.Name] = true
		if e.Value != "" && isSecret(e.Name) {
			p.add("%s: %s given as a plain value, not from a Secret", where, e.Name)
		}
	}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef == nil {
			continue
		}
		cm, ok := configMaps[ef.ConfigMapRef.Name]
		if !ok {
			p.add("%s: envFrom ConfigMap %s is not rendered", where, ef.ConfigMapRef.Name)
			continue
		}
		for k := range cm.Data {
			vars[k] = true
			if isSecret(k) {
				p.add("ConfigMap %s holds %s, which belongs in a Secret", cm.Name, k)
			}
		}
	}
	return vars
}

// checkCompanion checks that the Service, PodDisruptionBudget,
// autoscaler and ServiceMonitor fit the Deployments.
func (p *problems) checkCompanion(value any, deps []*appsv1.Deployment) {
	switch v := value.(type) {
	case *corev1.Service:
		if !selectsPods(v.Spec.Selector, deps) {
			p.add("Service %s selects no Deployment's pods", v.Name)
		}
	case *policyv1.PodDisruptionBudget:
		if v.Spec.Selector == nil || !selectsPods(v.Spec.Selector.MatchLabels, deps) {
			p.add("PodDisruptionBudget %s selects no Deployment's pods", v.Name)
		}
	case *autoscalingv2.HorizontalPodAutoscaler:
		found := false
		for _, d := range deps {
			found = found || (v.Spec.ScaleTargetRef.Kind == "Deployment" && v.Spec.ScaleTargetRef.Name == d.Name)
		}
		if !found {
			p.add("HorizontalPodAutoscaler %s scales no rendered Deployment", v.Name)
		}
		if v.Spec.MinReplicas == nil || *v.Spec.MinReplicas < 2 {
			p.add("HorizontalPodAutoscaler %s may scale below 2 nodes", v.Name)
		}
	case *monitoringv1.ServiceMonitor:
		for _, ep := range v.Spec.Endpoints {
			if ep.Path != "/metrics" {
				p.add("ServiceMonitor %s scrapes %s, the platform serves /metrics", v.Name, ep.Path)
			}
		}
	}
}

func isSecret(name string) bool {
	switch name {
	case "PLATFORM_MASTER_KEY", "PLATFORM_MASTER_KEY_PREVIOUS", "PLATFORM_ADMIN_TOKEN", "PLATFORM_INTERNAL_TOKEN",
		"PLATFORM_EVENTSTORE_URL", "PLATFORM_POSTGRES_URL", "PLATFORM_FEED_PSEUDONYM_KEY", "PLATFORM_SMTP_URL", "PLATFORM_ESDB_URL":
		return true
	}
	return false
}

func selectsPods(selector map[string]string, deps []*appsv1.Deployment) bool {
	if len(selector) == 0 {
		return false
	}
	for _, d := range deps {
		if labels.SelectorFromSet(selector).Matches(labels.Set(d.Spec.Template.Labels)) {
			return true
		}
	}
	return false
}
