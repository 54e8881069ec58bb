//go:build test_performance && karpy_overlay

// karpy's addition to Karpenter's scheduling test package, compiled into it by bench/karpenter/run.sh
// with `go test -overlay` (the module cache stays untouched). It reuses the package's own benchmark
// code — `benchmarkScheduler`, `setupScheduler`, the pod generators `makeDiversePods`,
// `makePreferencePods`, `makePodAntiAffinityPods`, `makeGenericPods` and their seeded stream `r` —
// so that one process per scenario:
//  1. resets `r` to seed 42 and generates the scenario's pods with Karpenter's generators;
//  2. with KARPY_EXPORT_DIR set, writes exactly those inputs for karpy: catalog.json (the 400
//     `fake.InstanceTypes` with capacity, overhead, labels and every offering with its price),
//     provisioners.yaml (the benchmark's NodePool as a Provisioner) and pods.json (a v1 List);
//  3. runs Karpenter's own `benchmarkScheduler` on those pods (its pods/sec and nodes metrics);
//  4. solves once more on a deep copy to price the NodeClaims (cheapest compatible offering of
//     their instance-type options, what a launch takes);
//  5. prints one line `KARPY_RESULT {json}` with the figures and the process's peak RSS.
//
// Run: scheduling.test -test.run '^TestKarpyScenario$' with KARPY_SCENARIO=<name>.
package scheduling_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/fake"
	"sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	"sigs.k8s.io/karpenter/pkg/operator/injection"
	"sigs.k8s.io/karpenter/pkg/operator/options"
	"sigs.k8s.io/karpenter/pkg/test"
)

type karpyScenario struct {
	pods        func() []*corev1.Pod
	opts        []scheduling.Options
	ignorePrefs bool // PreferencePolicy=Ignore: karpy gets the pods with their preferences removed
}

// The scenarios of `make bench-karpenter`: Karpenter's own benchmark cases at 1k/5k/20k diverse pods
// and its two preference cases, plus a mutually anti-affine case and a generic-only case built with
// the file's own generators.
var karpyScenarios = map[string]karpyScenario{
	"diverse-1000":             {pods: func() []*corev1.Pod { return makeDiversePods(1000) }},
	"diverse-5000":             {pods: func() []*corev1.Pod { return makeDiversePods(5000) }},
	"diverse-20000":            {pods: func() []*corev1.Pod { return makeDiversePods(20000) }},
	"preferences-respect-4000": {pods: func() []*corev1.Pod { return makePreferencePods(4000) }},
	"preferences-ignore-4000": {
		pods:        func() []*corev1.Pod { return makePreferencePods(4000) },
		opts:        []scheduling.Options{scheduling.IgnorePreferences},
		ignorePrefs: true,
	},
	"anti-affinity-500": {pods: func() []*corev1.Pod { return makePodAntiAffinityPods(500, corev1.LabelHostname) }},
	"generic-5000":      {pods: func() []*corev1.Pod { return makeGenericPods(5000) }},
}

func TestKarpyScenario(t *testing.T) {
	name := os.Getenv("KARPY_SCENARIO")
	sc, ok := karpyScenarios[name]
	if !ok {
		names := make([]string, 0, len(karpyScenarios))
		for n := range karpyScenarios {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Fatalf("KARPY_SCENARIO=%q: expected one of %s", name, strings.Join(names, ", "))
	}
	r = rand.New(rand.NewSource(42)) //nolint:gosec // the benchmark's own seeded stream
	pods := sc.pods()
	if dir := os.Getenv("KARPY_EXPORT_DIR"); dir != "" {
		if err := karpyExport(dir, pods, sc.ignorePrefs); err != nil {
			t.Fatalf("exporting %s: %s", name, err)
		}
	}

	res := testing.Benchmark(func(b *testing.B) { benchmarkScheduler(b, pods, sc.opts...) })
	if res.N == 0 {
		t.Fatalf("Karpenter's benchmarkScheduler failed on %s", name)
	}

	copies := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		copies[i] = p.DeepCopy()
	}
	ctx = options.ToContext(injection.WithControllerName(context.Background(), "provisioner"), test.Options())
	s, err := setupScheduler(ctx, copies, append(sc.opts, scheduling.NumConcurrentReconciles(5))...)
	if err != nil {
		t.Fatalf("creating scheduler: %s", err)
	}
	results, err := s.Solve(ctx, copies)
	if err != nil {
		t.Fatalf("solving: %s", err)
	}
	price := 0.0
	for _, nc := range results.NewNodeClaims {
		price += karpyLaunchPrice(nc)
	}
	var usage syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
	out, _ := json.Marshal(map[string]any{
		"scenario":       name,
		"pods":           len(pods),
		"pods_per_sec":   res.Extra["pods/sec"],
		"bench_nodes":    res.Extra["nodes"],
		"iterations":     res.N,
		"nodes":          len(results.NewNodeClaims),
		"price":          price,
		"unschedulable":  len(results.PodErrors),
		"peak_rss_bytes": usage.Maxrss * 1024,
	})
	fmt.Printf("KARPY_RESULT %s\n", out)
}

// karpyLaunchPrice is the hourly price of the cheapest available offering, among a NodeClaim's
// instance-type options, that its requirements allow.
func karpyLaunchPrice(nc *scheduling.NodeClaim) float64 {
	best := math.Inf(1)
	for _, it := range nc.InstanceTypeOptions {
		ofs := it.Offerings.Available().Compatible(nc.Requirements)
		if len(ofs) > 0 && ofs.Cheapest().Price < best {
			best = ofs.Cheapest().Price
		}
	}
	return best
}

func karpyExport(dir string, pods []*corev1.Pod, ignorePrefs bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// setupScheduler's catalog: fake.InstanceTypes is a pure function of its argument.
	if err := karpyWriteJSON(filepath.Join(dir, "catalog.json"), karpyCatalog(fake.InstanceTypes(400))); err != nil {
		return err
	}
	// setupScheduler's NodePool: no requirements (so both capacity types and any instance type; the
	// types are all amd64, and linux among others), the limits it sets.
	provisioner := strings.Join([]string{
		"# The NodePool of Karpenter's scheduling benchmark (setupScheduler), as a karpy Provisioner.",
		"apiVersion: karpenter.sh/v1alpha5",
		"kind: Provisioner",
		"metadata:",
		"  name: default",
		"spec:",
		"  requirements:",
		"    - {key: " + v1.CapacityTypeLabelKey + ", operator: In, values: [spot, on-demand]}",
		"    # any instance type: keeps karpy's webhook from defaulting the AWS instance categories",
		"    - {key: " + corev1.LabelInstanceTypeStable + ", operator: Exists}",
		"  limits:",
		"    resources: {cpu: \"10000000\", memory: 10000000Gi}",
		"",
	}, "\n")
	if err := os.WriteFile(filepath.Join(dir, "provisioners.yaml"), []byte(provisioner), 0o644); err != nil {
		return err
	}
	items := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		c := p.DeepCopy()
		c.APIVersion, c.Kind = "v1", "Pod"
		if ignorePrefs {
			karpyStripPreferences(c)
		}
		items[i] = c
	}
	return karpyWriteJSON(filepath.Join(dir, "pods.json"), map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
}

// karpyStripPreferences removes what PreferencePolicy=Ignore makes Karpenter disregard.
func karpyStripPreferences(p *corev1.Pod) {
	if a := p.Spec.Affinity; a != nil {
		if a.NodeAffinity != nil {
			a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
		}
		if a.PodAffinity != nil {
			a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
		}
		if a.PodAntiAffinity != nil {
			a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
		}
	}
	var kept []corev1.TopologySpreadConstraint
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			kept = append(kept, c)
		}
	}
	p.Spec.TopologySpreadConstraints = kept
}

// karpyCatalog renders instance types in karpy's catalog format (`karpy catalog --output json`).
// Single-valued requirements become labels; zone and capacity type come from the offerings. The
// fake types allow three operating systems; karpy's catalog holds one value per label, linux.
func karpyCatalog(its []*cloudprovider.InstanceType) map[string]any {
	out := make([]map[string]any, 0, len(its))
	for _, it := range its {
		labels := map[string]string{corev1.LabelOSStable: string(corev1.Linux)}
		for key, req := range it.Requirements {
			if key == corev1.LabelTopologyZone || key == v1.CapacityTypeLabelKey {
				continue
			}
			if req.Operator() == corev1.NodeSelectorOpIn && req.Len() == 1 {
				labels[key] = req.Any()
			}
		}
		offerings := make([]map[string]any, 0, len(it.Offerings))
		for _, o := range it.Offerings {
			offerings = append(offerings, map[string]any{
				"zone":         o.Requirements.Get(corev1.LabelTopologyZone).Any(),
				"capacityType": o.Requirements.Get(v1.CapacityTypeLabelKey).Any(),
				"price":        o.Price,
				"available":    o.Available,
			})
		}
		out = append(out, map[string]any{
			"name":      it.Name,
			"capacity":  karpyQuantities(it.Capacity),
			"overhead":  karpyQuantities(it.Overhead.Total()),
			"labels":    labels,
			"offerings": offerings,
		})
	}
	return map[string]any{"instanceTypes": out}
}

func karpyQuantities(rl corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range rl {
		out[string(k)] = v.String()
	}
	return out
}

func karpyWriteJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
