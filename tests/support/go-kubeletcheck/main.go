// Command kubeletcheck runs kubelet configurations through Kubernetes' own kubelet code, pinned
// to the version in go.mod: the kubelet's flag parsing (cmd/kubelet/app/options), the
// KubeletConfiguration validation (pkg/kubelet/apis/config/validation) and the eviction
// threshold parsing (pkg/kubelet/eviction.ParseThresholdConfig), as a starting kubelet runs them.
//
// Input (stdin): a JSON array of cases {"name": "...", "flags": ["--max-pods=20", ...]}.
// Output (stdout): a JSON array {"name": "...", "ok": true|false, "error": "..."} in the same
// order. karpy's tests (tests/support/kubeletcheck.py) feed it every rendered flag set.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"k8s.io/kubernetes/cmd/kubelet/app/options"
	_ "k8s.io/kubernetes/pkg/features" // registers the kubelet's feature gates, as in the kubelet binary
	kubeletconfigvalidation "k8s.io/kubernetes/pkg/kubelet/apis/config/validation"
	"k8s.io/kubernetes/pkg/kubelet/eviction"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

type input struct {
	Name  string   `json:"name"`
	Flags []string `json:"flags"`
}

type output struct {
	Name  string `json:"name"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
}

func check(flags []string) error {
	kubeletFlags := options.NewKubeletFlags()
	config, err := options.NewKubeletConfiguration()
	if err != nil {
		return err
	}
	fs := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
	fs.SetOutput(devNull{})
	kubeletFlags.AddFlags(fs)
	options.AddKubeletConfigFlags(fs, config)
	if err := fs.Parse(flags); err != nil {
		return fmt.Errorf("parsing flags: %w", err)
	}
	if err := options.ValidateKubeletFlags(kubeletFlags); err != nil {
		return fmt.Errorf("validating flags: %w", err)
	}
	if err := kubeletconfigvalidation.ValidateKubeletConfiguration(config, utilfeature.DefaultFeatureGate); err != nil {
		return fmt.Errorf("validating configuration: %w", err)
	}
	if _, err := eviction.ParseThresholdConfig(config.EnforceNodeAllocatable, config.EvictionHard, config.EvictionSoft,
		config.EvictionSoftGracePeriod, config.EvictionMinimumReclaim); err != nil {
		return fmt.Errorf("eviction thresholds: %w", err)
	}
	return nil
}

type devNull struct{}

func (devNull) Write(p []byte) (int, error) { return len(p), nil }

func main() {
	var cases []input
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		fmt.Fprintf(os.Stderr, "kubeletcheck: reading cases: %v\n", err)
		os.Exit(2)
	}
	out := make([]output, 0, len(cases))
	for _, c := range cases {
		result := output{Name: c.Name, OK: true}
		if err := check(c.Flags); err != nil {
			result.OK, result.Error = false, err.Error()
		}
		out = append(out, result)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "kubeletcheck: writing results: %v\n", err)
		os.Exit(2)
	}
}
