package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// object is one decoded manifest.
type object struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Object is the typed value re-encoded (defaults are not applied).
	Object any `json:"object"`
}

// kinds maps apiVersion/kind to a new typed value: only these may appear.
var kinds = map[string]func() any{
	"apps/v1/Deployment":                 func() any { return &appsv1.Deployment{} },
	"v1/Service":                         func() any { return &corev1.Service{} },
	"v1/ServiceAccount":                  func() any { return &corev1.ServiceAccount{} },
	"v1/Secret":                          func() any { return &corev1.Secret{} },
	"v1/ConfigMap":                       func() any { return &corev1.ConfigMap{} },
	"batch/v1/Job":                       func() any { return &batchv1.Job{} },
	"policy/v1/PodDisruptionBudget":      func() any { return &policyv1.PodDisruptionBudget{} },
	"networking.k8s.io/v1/Ingress":       func() any { return &networkingv1.Ingress{} },
	"networking.k8s.io/v1/NetworkPolicy": func() any { return &networkingv1.NetworkPolicy{} },
}

// checkManifests decodes every YAML document of file strictly (unknown or
// duplicate fields and wrong types are errors) into the Kubernetes API type
// its apiVersion and kind name, then checks what the API server would
// refuse that types alone do not catch: names, labels, selectors that
// select their pods, named ports that exist.
func checkManifests(file string) ([]object, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []object
	var problems []string
	for i, doc := range splitYAML(raw) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			problems = append(problems, fmt.Sprintf("document %d: %v", i+1, err))
			continue
		}
		newObj, ok := kinds[tm.APIVersion+"/"+tm.Kind]
		if !ok {
			problems = append(problems, fmt.Sprintf("document %d: unexpected apiVersion/kind %s/%s", i+1, tm.APIVersion, tm.Kind))
			continue
		}
		obj := newObj()
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			problems = append(problems, fmt.Sprintf("document %d (%s): %v", i+1, tm.Kind, err))
			continue
		}
		meta := obj.(metav1.ObjectMetaAccessor).GetObjectMeta()
		where := tm.Kind + " " + meta.GetName()
		for _, msg := range validation.IsDNS1123Subdomain(meta.GetName()) {
			problems = append(problems, fmt.Sprintf("%s: metadata.name: %s", where, msg))
		}
		problems = append(problems, checkLabels(where+": metadata.labels", meta.GetLabels())...)
		problems = append(problems, checkObject(where, obj)...)
		out = append(out, object{Kind: tm.Kind, Name: meta.GetName(), Object: obj})
	}
	problems = append(problems, checkSelectors(out)...)
	if len(problems) > 0 {
		return out, errors.New(strings.Join(problems, "\n"))
	}
	return out, nil
}

func splitYAML(raw []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(raw, []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

func stripComments(d []byte) []byte {
	var b bytes.Buffer
	for _, l := range bytes.Split(d, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			b.Write(l)
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func checkLabels(where string, ls map[string]string) []string {
	var p []string
	for k, v := range ls {
		for _, msg := range validation.IsQualifiedName(k) {
			p = append(p, fmt.Sprintf("%s: key %q: %s", where, k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			p = append(p, fmt.Sprintf("%s: %s=%q: %s", where, k, v, msg))
		}
	}
	return p
}

func checkObject(where string, obj any) []string {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		var p []string
		sel, err := metav1.LabelSelectorAsSelector(o.Spec.Selector)
		if err != nil || o.Spec.Selector == nil || sel.Empty() {
			p = append(p, fmt.Sprintf("%s: spec.selector is missing or invalid: %v", where, err))
		} else if !sel.Matches(labels.Set(o.Spec.Template.Labels)) {
			p = append(p, fmt.Sprintf("%s: spec.selector %s does not select the pod template's labels %v", where, sel, o.Spec.Template.Labels))
		}
		return append(p, checkPod(where+": spec.template", o.Spec.Template)...)
	case *batchv1.Job:
		p := checkPod(where+": spec.template", o.Spec.Template)
		if rp := o.Spec.Template.Spec.RestartPolicy; rp != corev1.RestartPolicyNever && rp != corev1.RestartPolicyOnFailure {
			p = append(p, fmt.Sprintf("%s: a Job's restartPolicy must be Never or OnFailure, not %q", where, rp))
		}
		return p
	case *policyv1.PodDisruptionBudget:
		if (o.Spec.MinAvailable == nil) == (o.Spec.MaxUnavailable == nil) {
			return []string{where + ": set exactly one of minAvailable and maxUnavailable"}
		}
	case *corev1.Service:
		var p []string
		for _, port := range o.Spec.Ports {
			if port.Port < 1 || port.Port > 65535 {
				p = append(p, fmt.Sprintf("%s: port %d out of range", where, port.Port))
			}
		}
		return p
	}
	return nil
}

func checkPod(where string, t corev1.PodTemplateSpec) []string {
	var p []string
	p = append(p, checkLabels(where+".metadata.labels", t.Labels)...)
	if len(t.Spec.Containers) == 0 {
		p = append(p, where+": no containers")
	}
	for _, c := range t.Spec.Containers {
		cw := fmt.Sprintf("%s: container %s", where, c.Name)
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			p = append(p, fmt.Sprintf("%s: name: %s", cw, msg))
		}
		if c.Image == "" {
			p = append(p, cw+": no image")
		}
		ports := map[string]bool{}
		for _, port := range c.Ports {
			if port.Name != "" {
				for _, msg := range validation.IsValidPortName(port.Name) {
					p = append(p, fmt.Sprintf("%s: port name %q: %s", cw, port.Name, msg))
				}
				ports[port.Name] = true
			}
		}
		for name, pr := range map[string]*corev1.Probe{"startupProbe": c.StartupProbe, "readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe} {
			if pr == nil || pr.HTTPGet == nil {
				continue
			}
			if pp := pr.HTTPGet.Port; pp.StrVal != "" && !ports[pp.StrVal] {
				p = append(p, fmt.Sprintf("%s: %s names port %q, which the container does not declare", cw, name, pp.StrVal))
			}
		}
		for _, e := range c.Env {
			for _, msg := range validation.IsEnvVarName(e.Name) {
				p = append(p, fmt.Sprintf("%s: env %q: %s", cw, e.Name, msg))
			}
		}
		mounts := map[string]bool{}
		for _, v := range t.Spec.Volumes {
			mounts[v.Name] = true
		}
		for _, m := range c.VolumeMounts {
			if !mounts[m.Name] {
				p = append(p, fmt.Sprintf("%s: volumeMount %q names no volume of the pod", cw, m.Name))
			}
		}
	}
	return p
}

// checkSelectors: every Service and PodDisruptionBudget selects the pods of
// some Deployment.
func checkSelectors(objs []object) []string {
	var pods []labels.Set
	for _, o := range objs {
		if d, ok := o.Object.(*appsv1.Deployment); ok {
			pods = append(pods, labels.Set(d.Spec.Template.Labels))
		}
	}
	selects := func(sel labels.Selector) bool {
		for _, l := range pods {
			if sel.Matches(l) {
				return true
			}
		}
		return false
	}
	var p []string
	for _, o := range objs {
		switch v := o.Object.(type) {
		case *corev1.Service:
			if len(v.Spec.Selector) == 0 || !selects(labels.SelectorFromSet(v.Spec.Selector)) {
				p = append(p, fmt.Sprintf("Service %s selects no Deployment's pods", o.Name))
			}
		case *policyv1.PodDisruptionBudget:
			sel, err := metav1.LabelSelectorAsSelector(v.Spec.Selector)
			if err != nil || sel.Empty() || !selects(sel) {
				p = append(p, fmt.Sprintf("PodDisruptionBudget %s selects no Deployment's pods", o.Name))
			}
		}
	}
	return p
}
