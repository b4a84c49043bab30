package deploy

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/internal/config"
)

// object is a Kubernetes object from deploy/kubernetes, its spec kept for
// decoding by kind.
type object struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name        string            `yaml:"name"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"` // ConfigMap
	Spec yaml.Node         `yaml:"spec"`
	file string
}

type deploymentSpec struct {
	Replicas int `yaml:"replicas"`
	Selector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	} `yaml:"selector"`
	Template struct {
		Metadata struct {
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"metadata"`
		Spec podSpec `yaml:"spec"`
	} `yaml:"template"`
}

type podSpec struct {
	TerminationGracePeriodSeconds *int64 `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               struct {
		RunAsNonRoot *bool  `yaml:"runAsNonRoot"`
		RunAsUser    *int64 `yaml:"runAsUser"`
	} `yaml:"securityContext"`
	Containers     []container `yaml:"containers"`
	InitContainers []container `yaml:"initContainers"`
	Volumes        []struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name string `yaml:"name"`
		} `yaml:"configMap"`
		EmptyDir any `yaml:"emptyDir"`
	} `yaml:"volumes"`
}

type container struct {
	Name          string   `yaml:"name"`
	Command       []string `yaml:"command"`
	Args          []string `yaml:"args"`
	RestartPolicy string   `yaml:"restartPolicy"` // Always: a native sidecar
	Ports         []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	Lifecycle      *struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int64 `yaml:"seconds"`
			} `yaml:"sleep"`
			Exec *struct {
				Command []string `yaml:"command"`
			} `yaml:"exec"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext *struct {
		RunAsUser                *int64 `yaml:"runAsUser"`
		RunAsNonRoot             *bool  `yaml:"runAsNonRoot"`
		AllowPrivilegeEscalation *bool  `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool  `yaml:"readOnlyRootFilesystem"`
		Privileged               *bool  `yaml:"privileged"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
			Add  []string `yaml:"add"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []volumeMount `yaml:"volumeMounts"`
}

type volumeMount struct {
	Name      string `yaml:"name"`
	MountPath string `yaml:"mountPath"`
	SubPath   string `yaml:"subPath"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
	PeriodSeconds    int `yaml:"periodSeconds"`
	FailureThreshold int `yaml:"failureThreshold"`
}

// manifests reads every object of deploy/kubernetes/*.yaml.
func manifests(t *testing.T) []object {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("kubernetes", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in kubernetes/: %v", err)
	}
	var objs []object
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var o object
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if o.Kind == "" {
				t.Fatalf("%s: an object without a kind", f)
			}
			o.file = f
			objs = append(objs, o)
		}
	}
	return objs
}

// only returns the one object of kind, failing the test unless there is
// exactly one, with its spec decoded into spec when not nil.
func only(t *testing.T, objs []object, kind string, spec any) object {
	t.Helper()
	var found []object
	for _, o := range objs {
		if o.Kind == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d objects of kind %s in kubernetes/, want 1", len(found), kind)
	}
	if spec != nil {
		if err := found[0].Spec.Decode(spec); err != nil {
			t.Fatalf("%s: %s spec: %v", found[0].file, kind, err)
		}
	}
	return found[0]
}

// shipped is the Kubernetes deployment as the tests read it.
type shipped struct {
	objs []object
	dep  deploymentSpec
	ssr  container      // the sluice container
	cfg  *config.Config // the ConfigMap's sluice.yaml
	cm   object
}

func readShipped(t *testing.T) shipped {
	t.Helper()
	var s shipped
	s.objs = manifests(t)
	only(t, s.objs, "Deployment", &s.dep)
	s.cm = only(t, s.objs, "ConfigMap", nil)
	l, err := config.ParseWith("configmap sluice.yaml", []byte(s.cm.Data["sluice.yaml"]), config.Overrides{})
	if err != nil {
		t.Fatalf("the ConfigMap's sluice.yaml does not validate:\n%v", err)
	}
	for _, w := range l.Warnings {
		t.Errorf("the ConfigMap's sluice.yaml: %v", w)
	}
	s.cfg = l.Config
	for _, c := range s.dep.Template.Spec.Containers {
		if slices.Contains(c.Args, "serve") {
			s.ssr = c
		}
	}
	if s.ssr.Name == "" {
		t.Fatal("no container runs `sluice serve` (args)")
	}
	return s
}

func TestKubernetesConfig(t *testing.T) {
	s := readShipped(t)
	if s.cfg.Workers == nil {
		t.Fatal("the ConfigMap's sluice.yaml has no workers: it is meant for an SSR fleet")
	}
	ap, err := netip.ParseAddrPort(s.cfg.Admin.Listen)
	if err != nil || !ap.Addr().IsLoopback() {
		t.Errorf("admin.listen: got %q, want a loopback address (the admin listener stays in the pod)", s.cfg.Admin.Listen)
	}
	if s.cfg.Admin.PProf {
		t.Error("admin.pprof: got true, want false")
	}
	// The container is started with the ConfigMap's file.
	i := slices.Index(s.ssr.Args, "-c")
	if i < 0 || i+1 == len(s.ssr.Args) {
		t.Fatalf("%s args %q: no -c FILE", s.ssr.Name, s.ssr.Args)
	}
	if !mountsConfigMap(s.dep.Template.Spec, s.ssr, s.ssr.Args[i+1], s.cm.Metadata.Name, "sluice.yaml") {
		t.Errorf("%s reads %s, which is not the ConfigMap %s's sluice.yaml", s.ssr.Name, s.ssr.Args[i+1], s.cm.Metadata.Name)
	}
	// The image's ENTRYPOINT runs sluice under tini: a command would
	// replace it, and sluice would be PID 1 with nobody reaping orphans.
	if len(s.ssr.Command) > 0 {
		t.Errorf("%s sets command %q: it replaces the image's ENTRYPOINT (tini); set args only", s.ssr.Name, s.ssr.Command)
	}
}

// mountsConfigMap reports whether path, in c, is key of ConfigMap cm.
func mountsConfigMap(pod podSpec, c container, path, cm, key string) bool {
	for _, m := range c.VolumeMounts {
		var vol string
		switch {
		case m.SubPath == "" && path == filepath.Join(m.MountPath, key):
			vol = m.Name
		case m.SubPath == key && path == m.MountPath:
			vol = m.Name
		default:
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == vol && v.ConfigMap != nil && v.ConfigMap.Name == cm {
				return true
			}
		}
	}
	return false
}

func TestKubernetesGracePeriodCoversShutdown(t *testing.T) {
	s := readShipped(t)
	pod := s.dep.Template.Spec
	grace := 30 * time.Second // Kubernetes' default
	if pod.TerminationGracePeriodSeconds != nil {
		grace = time.Duration(*pod.TerminationGracePeriodSeconds) * time.Second
	}
	// The grace period counts from the start of the preStop hook, and
	// SIGTERM comes only after it.
	need := worstCaseShutdown(s.cfg) + preStop(t, s.ssr)
	if grace <= need {
		t.Errorf("terminationGracePeriodSeconds: got %v, want more than the worst-case shutdown %v "+
			"(shutdownTimeout %v + workers.stopTimeout %v + 1 s + admin close 2 s + preStop)",
			grace, need, s.cfg.Server.ShutdownTimeout, s.cfg.Workers.StopTimeout)
	}
}

// preStop is how long c's preStop hook delays SIGTERM.
func preStop(t *testing.T, c container) time.Duration {
	t.Helper()
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return 0
	}
	ps := c.Lifecycle.PreStop
	switch {
	case ps.Sleep != nil:
		return time.Duration(ps.Sleep.Seconds) * time.Second
	case ps.Exec != nil && len(ps.Exec.Command) == 2 && filepath.Base(ps.Exec.Command[0]) == "sleep":
		n, err := strconv.Atoi(ps.Exec.Command[1])
		if err == nil {
			return time.Duration(n) * time.Second
		}
	}
	t.Fatalf("%s: a preStop hook whose length the test cannot tell: %+v", c.Name, *ps)
	return 0
}

func TestKubernetesProbes(t *testing.T) {
	s := readShipped(t)
	_, port, err := net.SplitHostPort(s.cfg.Server.Listen)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		name  string
		probe *probe
		path  string
	}{
		{"readinessProbe", s.ssr.ReadinessProbe, s.cfg.Server.ReadyPath},
		{"livenessProbe", s.ssr.LivenessProbe, s.cfg.Server.HealthPath},
	} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: no httpGet %s", s.ssr.Name, p.name)
			continue
		}
		if got := p.probe.HTTPGet.Path; got != p.path {
			t.Errorf("%s path: got %q, want %q (the config's)", p.name, got, p.path)
		}
		if got := containerPort(s.ssr, p.probe.HTTPGet.Port); got != port {
			t.Errorf("%s port: got %q, want sluice's listener port %s", p.name, got, port)
		}
	}
	// The readiness probe must see the drain's 503 before the listener
	// closes, drainDelay after the signal.
	if rp := s.ssr.ReadinessProbe; rp != nil {
		period, failures := orInt(rp.PeriodSeconds, 10), orInt(rp.FailureThreshold, 3)
		if seen := time.Duration(period*failures) * time.Second; seen > s.cfg.Server.DrainDelay {
			t.Errorf("readinessProbe: %v (period × failureThreshold) to see a drain, longer than server.drainDelay %v",
				seen, s.cfg.Server.DrainDelay)
		}
	}
}

func orInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// containerPort resolves a probe's port (a number or a port's name) to a
// number, "" if c has no such port.
func containerPort(c container, port any) string {
	switch p := port.(type) {
	case int:
		return strconv.Itoa(p)
	case string:
		for _, cp := range c.Ports {
			if cp.Name == p {
				return strconv.Itoa(cp.ContainerPort)
			}
		}
	}
	return ""
}

func TestKubernetesSecurityContext(t *testing.T) {
	s := readShipped(t)
	pod := s.dep.Template.Spec
	if sc := pod.SecurityContext; sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Error("pod securityContext.runAsNonRoot: want true")
	}
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		sc := c.SecurityContext
		if sc == nil {
			t.Errorf("%s: no securityContext", c.Name)
			continue
		}
		uid := sc.RunAsUser
		if uid == nil {
			uid = pod.SecurityContext.RunAsUser
		}
		if uid == nil || *uid == 0 {
			t.Errorf("%s: runAsUser: want a non-root uid, so that runAsNonRoot holds for any image", c.Name)
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: allowPrivilegeEscalation: want false", c.Name)
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Errorf("%s: privileged", c.Name)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("%s: readOnlyRootFilesystem: want true", c.Name)
		}
		if !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
			t.Errorf("%s: capabilities: got drop %v add %v, want drop [ALL] and nothing added",
				c.Name, sc.Capabilities.Drop, sc.Capabilities.Add)
		}
		if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" {
			t.Errorf("%s: resources.requests: want cpu and memory", c.Name)
		}
	}
	// An init container that serves runs beside the pod's containers only
	// as a native sidecar; a plain one would keep the pod from starting.
	for _, c := range pod.InitContainers {
		if c.RestartPolicy != "Always" {
			t.Errorf("init container %s: restartPolicy %q, want Always (a sidecar)", c.Name, c.RestartPolicy)
		}
	}
	// On a read-only root, sluice's private files (the workers' Unix
	// sockets, their start-up spec) and Node.js's need a writable /tmp.
	if !slices.ContainsFunc(s.ssr.VolumeMounts, func(m volumeMount) bool { return m.MountPath == "/tmp" }) {
		t.Errorf("%s: no volume at /tmp on a read-only root", s.ssr.Name)
	}
}

func TestKubernetesDisruptionBudget(t *testing.T) {
	s := readShipped(t)
	var pdb struct {
		MaxUnavailable any `yaml:"maxUnavailable"`
		MinAvailable   any `yaml:"minAvailable"`
		Selector       struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
	}
	only(t, s.objs, "PodDisruptionBudget", &pdb)
	if pdb.MaxUnavailable == nil && pdb.MinAvailable == nil {
		t.Error("PodDisruptionBudget: neither maxUnavailable nor minAvailable")
	}
	if len(pdb.Selector.MatchLabels) == 0 || !selects(pdb.Selector.MatchLabels, s.dep.Template.Metadata.Labels) {
		t.Errorf("PodDisruptionBudget selector %v does not select the pods (labels %v)",
			pdb.Selector.MatchLabels, s.dep.Template.Metadata.Labels)
	}
}

func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestKubernetesService(t *testing.T) {
	s := readShipped(t)
	var svc struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			TargetPort any `yaml:"targetPort"`
		} `yaml:"ports"`
	}
	only(t, s.objs, "Service", &svc)
	if !selects(svc.Selector, s.dep.Template.Metadata.Labels) {
		t.Errorf("Service selector %v does not select the pods", svc.Selector)
	}
	_, port, _ := net.SplitHostPort(s.cfg.Server.Listen)
	for _, p := range svc.Ports {
		if got := containerPort(s.ssr, p.TargetPort); got != port {
			t.Errorf("Service targetPort %v: got port %q, want only sluice's listener (%s)", p.TargetPort, got, port)
		}
	}
}

// TestKubernetesMetricsSidecar: Prometheus reaches the loopback admin
// listener only through the sidecar, which must proxy GET /metrics to the
// configured admin address, on the port the scrape annotation names, and
// serve nothing else.
func TestKubernetesMetricsSidecar(t *testing.T) {
	s := readShipped(t)
	conf := s.cm.Data["nginx.conf"]
	if want := "proxy_pass http://" + s.cfg.Admin.Listen + ";"; !strings.Contains(conf, want) {
		t.Errorf("nginx.conf: no %q (admin.listen)", want)
	}
	if n := strings.Count(conf, "proxy_pass"); n != 1 {
		t.Errorf("nginx.conf: %d proxy_pass, want 1 (GET /metrics only)", n)
	}
	if !regexp.MustCompile(`location = /metrics \{\s*limit_except GET \{ deny all; \}`).MatchString(conf) {
		t.Error("nginx.conf: /metrics is not limited to GET")
	}
	m := regexp.MustCompile(`listen (\d+);`).FindStringSubmatch(conf)
	if m == nil {
		t.Fatal("nginx.conf: no listen port")
	}
	if got := s.dep.Template.Metadata.Annotations["prometheus.io/port"]; got != m[1] {
		t.Errorf("prometheus.io/port: got %q, want the sidecar's %s", got, m[1])
	}
}
