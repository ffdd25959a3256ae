// Command validate decodes rendered Kubernetes manifests strictly into the
// real API types (k8s.io/api, and the Prometheus Operator's for PodMonitor
// and PrometheusRule): an unknown or duplicated field, a wrong type or an
// unknown kind is an error, as the API server's strict field validation
// would make it. It then checks what the types alone cannot: selectors
// that select the pod template, mounts with volumes, the PodMonitor's port.
//
//	go run . < manifests.yaml            # validate, print a summary
//	go run . -container < manifests.yaml # also print the DaemonSet's
//	                                     # runtime spec as JSON
//
// tests/k8s_manifests.rs validates the chart's renderings with it, and
// tests/k8s_image.rs runs the image under podman with the securityContext,
// host namespaces and mounts -container prints, so the two cannot drift.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Mount is one volume mount of the container, with its source.
type Mount struct {
	MountPath         string `json:"mountPath"`
	ReadOnly          bool   `json:"readOnly"`
	RecursiveReadOnly string `json:"recursiveReadOnly,omitempty"`
	HostPath          string `json:"hostPath,omitempty"`
	HostPathType      string `json:"hostPathType,omitempty"`
	EmptyDirMedium    string `json:"emptyDirMedium,omitempty"`
	EmptyDirSizeLimit string `json:"emptyDirSizeLimit,omitempty"`
}

// Env is one environment variable: a value, or a downward API field.
type Env struct {
	Name     string `json:"name"`
	Value    string `json:"value,omitempty"`
	FieldRef string `json:"fieldRef,omitempty"`
}

// Container is what a runtime needs to run the DaemonSet's container as
// the kubelet would: the parts tests/k8s_image.rs turns into podman flags.
type Container struct {
	Image                    string   `json:"image"`
	Command                  []string `json:"command"`
	Args                     []string `json:"args"`
	Env                      []Env    `json:"env"`
	HostPID                  bool     `json:"hostPID"`
	HostNetwork              bool     `json:"hostNetwork"`
	HostIPC                  bool     `json:"hostIPC"`
	Privileged               bool     `json:"privileged"`
	AllowPrivilegeEscalation bool     `json:"allowPrivilegeEscalation"`
	ReadOnlyRootFilesystem   bool     `json:"readOnlyRootFilesystem"`
	RunAsUser                int64    `json:"runAsUser"`
	RunAsGroup               int64    `json:"runAsGroup"`
	CapAdd                   []string `json:"capAdd"`
	CapDrop                  []string `json:"capDrop"`
	SeccompType              string   `json:"seccompType"`
	SeccompLocalhostProfile  string   `json:"seccompLocalhostProfile,omitempty"`
	Mounts                   []Mount  `json:"mounts"`
	Port                     int32    `json:"port"`
	CPURequest               string   `json:"cpuRequest"`
	MemoryRequest            string   `json:"memoryRequest"`
	CPULimit                 string   `json:"cpuLimit,omitempty"`
	MemoryLimit              string   `json:"memoryLimit"`
}

func main() {
	container := flag.Bool("container", false, "print the DaemonSet's container as JSON")
	flag.Parse()
	docs, err := split(os.Stdin)
	if err != nil {
		fail(err)
	}
	var ds *appsv1.DaemonSet
	var pms []*monitoringv1.PodMonitor
	var kinds []string
	for i, doc := range docs {
		obj, kind, err := decode(doc)
		if err != nil {
			fail(fmt.Errorf("document %d: %w", i+1, err))
		}
		kinds = append(kinds, kind)
		switch o := obj.(type) {
		case *appsv1.DaemonSet:
			if ds != nil {
				fail(errors.New("more than one DaemonSet"))
			}
			ds = o
		case *monitoringv1.PodMonitor:
			pms = append(pms, o)
		case *monitoringv1.PrometheusRule:
			if err := checkRules(o); err != nil {
				fail(fmt.Errorf("PrometheusRule %s: %w", o.Name, err))
			}
		case *corev1.ConfigMap:
			for k, v := range o.Data {
				if strings.HasSuffix(k, ".json") && !json.Valid([]byte(v)) {
					fail(fmt.Errorf("ConfigMap %s: %s is not JSON", o.Name, k))
				}
			}
		}
	}
	if ds == nil {
		fail(errors.New("no DaemonSet"))
	}
	c, err := checkDaemonSet(ds)
	if err != nil {
		fail(fmt.Errorf("DaemonSet %s: %w", ds.Name, err))
	}
	for _, pm := range pms {
		if err := checkPodMonitor(pm, ds); err != nil {
			fail(fmt.Errorf("PodMonitor %s: %w", pm.Name, err))
		}
	}
	if *container {
		out, err := json.MarshalIndent(c, "", "  ")
		if err != nil {
			fail(err)
		}
		fmt.Println(string(out))
		return
	}
	fmt.Printf("valid: %s\n", strings.Join(kinds, ", "))
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "validate: %v\n", err)
	os.Exit(1)
}

// split returns the YAML documents of r, empty ones left out.
func split(r io.Reader) ([][]byte, error) {
	y := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var docs [][]byte
	for {
		d, err := y.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		var probe map[string]any
		if err := yaml.Unmarshal(d, &probe); err != nil {
			return nil, err
		}
		if len(probe) > 0 {
			docs = append(docs, bytes.Clone(d))
		}
	}
}

// decode picks the API type from apiVersion and kind and decodes strictly.
func decode(doc []byte) (any, string, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, "", err
	}
	var obj any
	switch tm.APIVersion + "/" + tm.Kind {
	case "apps/v1/DaemonSet":
		obj = &appsv1.DaemonSet{}
	case "v1/ServiceAccount":
		obj = &corev1.ServiceAccount{}
	case "v1/ConfigMap":
		obj = &corev1.ConfigMap{}
	case "v1/Namespace":
		obj = &corev1.Namespace{}
	case "scheduling.k8s.io/v1/PriorityClass":
		obj = &schedulingv1.PriorityClass{}
	case "monitoring.coreos.com/v1/PodMonitor":
		obj = &monitoringv1.PodMonitor{}
	case "monitoring.coreos.com/v1/PrometheusRule":
		obj = &monitoringv1.PrometheusRule{}
	default:
		return nil, "", fmt.Errorf("unexpected kind %q (apiVersion %q)", tm.Kind, tm.APIVersion)
	}
	// As the API server decodes with strict field validation: duplicate
	// keys, unknown fields and fields in the wrong case are errors
	// (encoding/json alone would take "hostPId" for hostPID).
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", tm.Kind, err)
	}
	strict, err := kjson.UnmarshalStrict(js, obj)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", tm.Kind, err)
	}
	if len(strict) > 0 {
		return nil, "", fmt.Errorf("%s: %w", tm.Kind, errors.Join(strict...))
	}
	return obj, tm.Kind, nil
}

func checkDaemonSet(ds *appsv1.DaemonSet) (*Container, error) {
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		return nil, err
	}
	pod := ds.Spec.Template.Spec
	if !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
		return nil, errors.New("the selector does not select the pod template")
	}
	if len(pod.Containers) != 1 {
		return nil, fmt.Errorf("%d containers, want 1", len(pod.Containers))
	}
	ctr := pod.Containers[0]
	sc := ctr.SecurityContext
	if sc == nil || sc.Capabilities == nil || sc.SeccompProfile == nil {
		return nil, errors.New("the container has no securityContext with capabilities and a seccomp profile")
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	c := &Container{
		Image:       ctr.Image,
		Command:     ctr.Command,
		Args:        ctr.Args,
		HostPID:     pod.HostPID,
		HostNetwork: pod.HostNetwork,
		HostIPC:     pod.HostIPC,
		SeccompType: string(sc.SeccompProfile.Type),
	}
	if sc.SeccompProfile.LocalhostProfile != nil {
		c.SeccompLocalhostProfile = *sc.SeccompProfile.LocalhostProfile
	}
	deref := func(b *bool) bool { return b != nil && *b }
	c.Privileged = deref(sc.Privileged)
	c.AllowPrivilegeEscalation = sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation
	c.ReadOnlyRootFilesystem = deref(sc.ReadOnlyRootFilesystem)
	if sc.RunAsUser == nil || sc.RunAsGroup == nil {
		return nil, errors.New("runAsUser and runAsGroup must be explicit")
	}
	c.RunAsUser, c.RunAsGroup = *sc.RunAsUser, *sc.RunAsGroup
	for _, a := range sc.Capabilities.Add {
		c.CapAdd = append(c.CapAdd, string(a))
	}
	for _, d := range sc.Capabilities.Drop {
		c.CapDrop = append(c.CapDrop, string(d))
	}
	for _, e := range ctr.Env {
		env := Env{Name: e.Name, Value: e.Value}
		if e.ValueFrom != nil {
			if e.ValueFrom.FieldRef == nil {
				return nil, fmt.Errorf("env %s: only fieldRef is supported", e.Name)
			}
			env.FieldRef = e.ValueFrom.FieldRef.FieldPath
		}
		c.Env = append(c.Env, env)
	}
	for _, m := range ctr.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			return nil, fmt.Errorf("mount %s: no volume of that name", m.Name)
		}
		mm := Mount{MountPath: m.MountPath, ReadOnly: m.ReadOnly}
		if m.RecursiveReadOnly != nil {
			mm.RecursiveReadOnly = string(*m.RecursiveReadOnly)
		}
		switch {
		case v.HostPath != nil:
			mm.HostPath = v.HostPath.Path
			if v.HostPath.Type != nil {
				mm.HostPathType = string(*v.HostPath.Type)
			}
		case v.EmptyDir != nil:
			mm.EmptyDirMedium = string(v.EmptyDir.Medium)
			if v.EmptyDir.SizeLimit != nil {
				mm.EmptyDirSizeLimit = v.EmptyDir.SizeLimit.String()
			}
		default:
			return nil, fmt.Errorf("mount %s: only hostPath and emptyDir volumes are expected", m.Name)
		}
		c.Mounts = append(c.Mounts, mm)
	}
	for _, p := range ctr.Ports {
		if p.Name == "metrics" {
			c.Port = p.ContainerPort
		}
	}
	if c.Port == 0 {
		return nil, errors.New("no port named metrics")
	}
	res := ctr.Resources
	// Requests for both, a memory limit; a CPU limit is optional (the
	// chart sets none: throttling would distort the calibration).
	for _, q := range []struct {
		l        corev1.ResourceList
		n        corev1.ResourceName
		dst      *string
		required bool
	}{
		{res.Requests, corev1.ResourceCPU, &c.CPURequest, true},
		{res.Requests, corev1.ResourceMemory, &c.MemoryRequest, true},
		{res.Limits, corev1.ResourceCPU, &c.CPULimit, false},
		{res.Limits, corev1.ResourceMemory, &c.MemoryLimit, true},
	} {
		v, ok := q.l[q.n]
		if !ok && q.required {
			return nil, fmt.Errorf("no %s in %s", q.n, "requests or limits")
		}
		if ok {
			*q.dst = v.String()
		}
	}
	return c, nil
}

func checkPodMonitor(pm *monitoringv1.PodMonitor, ds *appsv1.DaemonSet) error {
	if pm.Namespace != ds.Namespace {
		return fmt.Errorf("namespace %q, the DaemonSet's is %q", pm.Namespace, ds.Namespace)
	}
	sel, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
	if err != nil {
		return err
	}
	if !sel.Matches(labels.Set(ds.Spec.Template.Labels)) {
		return errors.New("its selector does not select nettop's pods")
	}
	for _, ep := range pm.Spec.PodMetricsEndpoints {
		found := false
		for _, p := range ds.Spec.Template.Spec.Containers[0].Ports {
			if ep.Port != nil && p.Name == *ep.Port {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("endpoint port %v is not a port of nettop's container", ep.Port)
		}
	}
	return nil
}

func checkRules(r *monitoringv1.PrometheusRule) error {
	if len(r.Spec.Groups) == 0 {
		return errors.New("no rule groups")
	}
	for _, g := range r.Spec.Groups {
		if len(g.Rules) == 0 {
			return fmt.Errorf("group %s has no rules", g.Name)
		}
		for _, rule := range g.Rules {
			if (rule.Alert == "") == (rule.Record == "") {
				return fmt.Errorf("group %s: a rule must be an alert or a record", g.Name)
			}
			if rule.Expr.String() == "" {
				return fmt.Errorf("group %s: rule %s%s has no expr", g.Name, rule.Alert, rule.Record)
			}
		}
	}
	return nil
}
