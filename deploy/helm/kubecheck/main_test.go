package main

import (
	"strings"
	"testing"
)

const goodDeployment = `---
# Source: x/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: p
spec:
  replicas: 2
  selector:
    matchLabels: {app: p}
  template:
    metadata:
      labels: {app: p}
    spec:
      securityContext: {runAsNonRoot: true}
      containers:
        - name: platform
          image: p:1
          env:
            - {name: PLATFORM_NODE_ID, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
            - {name: PLATFORM_ADDR, value: "0.0.0.0:8080"}
            - {name: PLATFORM_DATA_DIR, value: /data}
            - {name: PLATFORM_EVENTSTORE_URL, valueFrom: {secretKeyRef: {name: s, key: u}}}
            - {name: PLATFORM_POSTGRES_URL, valueFrom: {secretKeyRef: {name: s, key: u}}}
            - {name: PLATFORM_MASTER_KEY, valueFrom: {secretKeyRef: {name: s, key: m}}}
            - {name: PLATFORM_ADMIN_TOKEN, valueFrom: {secretKeyRef: {name: s, key: a}}}
            - {name: PLATFORM_INTERNAL_TOKEN, valueFrom: {secretKeyRef: {name: s, key: i}}}
          readinessProbe: {httpGet: {path: /readyz, port: http}}
          livenessProbe: {httpGet: {path: /healthz, port: http}}
          resources: {requests: {cpu: 100m, memory: 64Mi}}
          securityContext: {readOnlyRootFilesystem: true, allowPrivilegeEscalation: false}
          volumeMounts: [{name: data, mountPath: /data}]
      volumes: [{name: data, emptyDir: {}}]
`

func run(t *testing.T, manifest string) []string {
	t.Helper()
	objs, err := decodeAll(strings.NewReader(manifest))
	if err != nil {
		return []string{err.Error()}
	}
	return check(objs, nil)
}

func TestAcceptsAWellFormedDeployment(t *testing.T) {
	if p := run(t, goodDeployment); len(p) != 0 {
		t.Fatalf("problems: %v", p)
	}
}

func TestRefuses(t *testing.T) {
	for name, c := range map[string]struct{ from, to, want string }{
		"unknown field":        {"image: p:1", "image: p:1\n          imagePullPolcy: Always", `unknown field "imagePullPolcy"`},
		"misplaced field":      {"replicas: 2", "replicas: 2\n  containers: []", `unknown field "containers"`},
		"unknown kind":         {"kind: Deployment", "kind: Deploymnt", "not a type this check knows"},
		"probe path":           {"path: /readyz", "path: /ready", "readiness probe on /ready"},
		"writable root":        {"readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "root filesystem is writable"},
		"secret in plain text": {"{name: PLATFORM_MASTER_KEY, valueFrom: {secretKeyRef: {name: s, key: m}}}", "{name: PLATFORM_MASTER_KEY, value: abc}", "PLATFORM_MASTER_KEY given as a plain value"},
		"one replica":          {"replicas: 2", "replicas: 1", "1 replica(s)"},
		"selector mismatch":    {"matchLabels: {app: p}", "matchLabels: {app: q}", "selector does not match"},
	} {
		t.Run(name, func(t *testing.T) {
			m := strings.Replace(goodDeployment, c.from, c.to, 1)
			if m == goodDeployment {
				t.Fatalf("the case changes nothing")
			}
			p := strings.Join(run(t, m), "\n")
			if !strings.Contains(p, c.want) {
				t.Fatalf("want a problem containing %q, got:\n%s", c.want, p)
			}
		})
	}
}

func TestRefusesAnUnreadSetting(t *testing.T) {
	m := strings.Replace(goodDeployment, "- {name: PLATFORM_DATA_DIR, value: /data}", "- {name: PLATFORM_DATA_DIR, value: /data}\n            - {name: PLATFORM_DATADIR, value: /data}", 1)
	objs, err := decodeAll(strings.NewReader(m))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, k := range []string{"PLATFORM_NODE_ID", "PLATFORM_ADDR", "PLATFORM_DATA_DIR", "PLATFORM_EVENTSTORE_URL", "PLATFORM_POSTGRES_URL", "PLATFORM_MASTER_KEY", "PLATFORM_ADMIN_TOKEN", "PLATFORM_INTERNAL_TOKEN"} {
		known[k] = true
	}
	if p := strings.Join(check(objs, known), "\n"); !strings.Contains(p, "PLATFORM_DATADIR is not a setting the platform reads") {
		t.Fatalf("got: %s", p)
	}
}
