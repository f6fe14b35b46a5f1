// One executable for the five Kubernetes node components (a multi-call binary): linking them together
// makes one ~145 MB file instead of five totalling ~480 MB, and one image layer serves every component.
// The component is picked from the name the binary was started under (a symlink such as
// /usr/local/bin/kube-apiserver), or else from the first argument (`kube kubelet --version`).
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"

	// The upstream mains register these as side effects; without them a component would lack its
	// time zone database (CronJob), the JSON log format and its build/client metrics.
	_ "time/tzdata"

	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"

	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

// Closures rather than the constructors themselves: their signatures differ (the scheduler's takes
// variadic registry options, the kubelet's a context).
var components = map[string]func() *cobra.Command{
	"kube-apiserver":          func() *cobra.Command { return apiserver.NewAPIServerCommand() },
	"kube-controller-manager": func() *cobra.Command { return controllermanager.NewControllerManagerCommand() },
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
	"kube-proxy":              func() *cobra.Command { return proxy.NewProxyCommand() },
	"kubelet":                 func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) },
}

func main() {
	name := filepath.Base(os.Args[0])
	if _, ok := components[name]; !ok && len(os.Args) > 1 {
		if _, ok := components[os.Args[1]]; ok {
			// `kube kubelet --flags`: drop the program name so cobra sees the component's own arguments.
			name = os.Args[1]
			os.Args = append([]string{name}, os.Args[2:]...)
		}
	}
	newCommand, ok := components[name]
	if !ok {
		names := make([]string, 0, len(components))
		for n := range components {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "%s: start me as one of %v (a symlink of that name, or the first argument)\n", name, names)
		os.Exit(2)
	}
	os.Exit(cli.Run(newCommand()))
}
