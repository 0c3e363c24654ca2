package deploy_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadengine/engine/adapters/config"
)

const chart = "../deploy/helm/threadengine"

// manifest is the part of a rendered object the assertions read.
type manifest struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Object struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			Replicas *int `json:"replicas"`
			Strategy struct {
				RollingUpdate struct {
					MaxUnavailable any `json:"maxUnavailable"`
				} `json:"rollingUpdate"`
			} `json:"strategy"`
			MaxUnavailable any `json:"maxUnavailable"`
			Template       struct {
				Spec struct {
					SecurityContext struct {
						RunAsNonRoot *bool `json:"runAsNonRoot"`
					} `json:"securityContext"`
					TerminationGracePeriodSeconds int `json:"terminationGracePeriodSeconds"`
					Containers                    []struct {
						Args []string `json:"args"`
						Env  []struct {
							Name      string `json:"name"`
							Value     string `json:"value"`
							ValueFrom *struct {
								SecretKeyRef struct {
									Name string `json:"name"`
									Key  string `json:"key"`
								} `json:"secretKeyRef"`
							} `json:"valueFrom"`
						} `json:"env"`
						ReadinessProbe *struct {
							HTTPGet struct {
								Path string `json:"path"`
							} `json:"httpGet"`
						} `json:"readinessProbe"`
						LivenessProbe *struct {
							HTTPGet struct {
								Path string `json:"path"`
							} `json:"httpGet"`
						} `json:"livenessProbe"`
						Resources struct {
							Requests map[string]string `json:"requests"`
						} `json:"resources"`
						SecurityContext struct {
							ReadOnlyRootFilesystem   *bool `json:"readOnlyRootFilesystem"`
							AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation"`
						} `json:"securityContext"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
		StringData map[string]string `json:"stringData"`
	} `json:"object"`
}

// render runs helm template with values and validates the output with
// deploy/check k8s (strict decoding into the Kubernetes API types).
func render(t *testing.T, values map[string]any) map[string]manifest {
	t.Helper()
	vf := filepath.Join(t.TempDir(), "values.json")
	raw, _ := json.Marshal(values)
	if err := os.WriteFile(vf, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(chart)
	out, stderr, err := runHelm(t, "template", "te", abs, "--namespace", "engine", "--kube-version", "1.31.0", "-f", vf)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr)
	}
	file := filepath.Join(t.TempDir(), "rendered.yaml")
	if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	var objs []manifest
	if err := json.Unmarshal(runCheck(t, "k8s", file), &objs); err != nil {
		t.Fatal(err)
	}
	byKind := map[string]manifest{}
	for _, o := range objs {
		byKind[o.Kind] = o
	}
	return byKind
}

var required = map[string]any{"secret": map[string]any{
	"databaseURL":     "postgres://te:pw@db:5432/te?sslmode=verify-full",
	"hashChainSecret": "0123456789abcdef0123456789abcdef",
}}

// The chart lints, renders for several value sets, and what it renders
// decodes strictly into the Kubernetes API types; the engine settings it
// passes are keys and values the engine's configuration accepts.
func TestHelmChart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs helm")
	}
	t.Parallel()
	abs, _ := filepath.Abs(chart)
	vf := filepath.Join(t.TempDir(), "values.json")
	raw, _ := json.Marshal(required)
	if err := os.WriteFile(vf, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, stderr, err := runHelm(t, "lint", "--strict", "--kube-version", "1.31.0", abs, "-f", vf); err != nil {
		t.Fatalf("helm lint: %v\n%s%s", err, out, stderr)
	}
	if _, stderr, err := runHelm(t, "template", "te", abs, "--kube-version", "1.31.0"); err == nil ||
		!strings.Contains(stderr, "secret.databaseURL (or existingSecret) is required") {
		t.Fatalf("rendering without a database URL: %v %s", err, stderr)
	}

	m := render(t, required)
	for _, kind := range []string{"Deployment", "Service", "PodDisruptionBudget", "Secret", "Job", "ServiceAccount"} {
		if _, ok := m[kind]; !ok {
			t.Errorf("no %s rendered", kind)
		}
	}
	if _, ok := m["Ingress"]; ok {
		t.Error("an Ingress rendered while ingress.enabled is false")
	}
	dep := m["Deployment"].Object.Spec
	if dep.Replicas == nil || *dep.Replicas < 2 || dep.Strategy.RollingUpdate.MaxUnavailable != float64(0) {
		t.Errorf("deployment: replicas %v, maxUnavailable %v: want several replicas replaced one at a time", dep.Replicas, dep.Strategy.RollingUpdate.MaxUnavailable)
	}
	if m["PodDisruptionBudget"].Object.Spec.MaxUnavailable != float64(1) {
		t.Errorf("pdb maxUnavailable %v", m["PodDisruptionBudget"].Object.Spec.MaxUnavailable)
	}
	pod := dep.Template.Spec
	c := pod.Containers[0]
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("probes: readiness %+v liveness %+v", c.ReadinessProbe, c.LivenessProbe)
	}
	if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot ||
		c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem ||
		c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Errorf("security context: pod %+v container %+v", pod.SecurityContext, c.SecurityContext)
	}
	if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" {
		t.Errorf("resources: %+v", c.Resources)
	}
	if pod.TerminationGracePeriodSeconds <= 30 {
		t.Errorf("terminationGracePeriodSeconds %d: must exceed server.shutdown_timeout (30s)", pod.TerminationGracePeriodSeconds)
	}
	job := m["Job"].Object
	if hook := job.Metadata.Annotations["helm.sh/hook"]; hook != "pre-install,pre-upgrade" {
		t.Errorf("migration job hook %q", hook)
	}
	if args := job.Spec.Template.Spec.Containers[0].Args; strings.Join(args, " ") != "migrate up" {
		t.Errorf("migration job args %v", args)
	}
	secret := m["Secret"].Object
	if secret.Metadata.Annotations["helm.sh/hook-weight"] >= job.Metadata.Annotations["helm.sh/hook-weight"] {
		t.Error("the Secret hook must be created before the migration Job that reads it")
	}

	// Every THREADENGINE_* variable of the pod and the job is a key the
	// engine accepts, with a value it accepts (secrets from the Secret).
	for _, name := range []string{"deployment", "job"} {
		containers := pod.Containers
		if name == "job" {
			containers = job.Spec.Template.Spec.Containers
		}
		var env []string
		for _, e := range containers[0].Env {
			v := e.Value
			if e.ValueFrom != nil {
				v = secret.StringData[e.ValueFrom.SecretKeyRef.Key]
			}
			env = append(env, e.Name+"="+v)
		}
		if _, err := config.Load("", env); err != nil {
			t.Errorf("%s environment %v: %v", name, env, err)
		}
	}

	// Another value set: an existing Secret, an Ingress, no hooks, no sleep.
	m = render(t, map[string]any{"existingSecret": "mine", "ingress": map[string]any{"enabled": true, "className": "nginx"},
		"migrations": map[string]any{"enabled": false}, "preStopSleepSeconds": 0, "replicaCount": 2,
		"config": map[string]any{"publicURL": "https://te.example.com", "trustedProxies": "10.0.0.0/8"}})
	if _, ok := m["Secret"]; ok {
		t.Error("a Secret rendered although existingSecret names one")
	}
	if _, ok := m["Job"]; ok {
		t.Error("the migration Job rendered while migrations.enabled is false")
	}
	if _, ok := m["Ingress"]; !ok {
		t.Error("no Ingress rendered with ingress.enabled")
	}
	var env []string
	for _, e := range m["Deployment"].Object.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil {
			if e.ValueFrom.SecretKeyRef.Name != "mine" {
				t.Errorf("%s reads secret %q, want the existing one", e.Name, e.ValueFrom.SecretKeyRef.Name)
			}
			continue
		}
		env = append(env, e.Name+"="+e.Value)
	}
	if _, err := config.Load("", env); err != nil {
		t.Errorf("environment %v: %v", env, err)
	}

	// The strict decoding can fail: a misspelt field is refused.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  prots: [{port: 80}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := tryCheck(t, "k8s", bad); err == nil || !strings.Contains(stderr, `unknown field "prots"`) {
		t.Errorf("a misspelt field passed: %v %s", err, stderr)
	}
}
