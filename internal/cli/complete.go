package cli

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rtscope/rtscope/internal/engine"
	"github.com/rtscope/rtscope/internal/metric"
)

// flagCompletions complete the values of the flags several commands
// share, by name: cobra's completion scripts ask rtscope for them
// (rtscope __complete), so the candidates are those of the running system.
var flagCompletions = map[string]cobra.CompletionFunc{
	"comm":    completeTaskNames,
	"cgroup":  completeCgroups,
	"show":    completeTaskNames,
	"slo":     completeSLO,
	"engine":  cobra.FixedCompletions([]string{engine.EngineBTF, engine.EngineClassic}, cobra.ShellCompDirectiveNoFileComp),
	"fail-on": cobra.FixedCompletions([]string{"warn", "fail"}, cobra.ShellCompDirectiveNoFileComp),
}

// addCompletions registers flagCompletions on every command of the tree
// that has the flag.
func addCompletions(c *cobra.Command) {
	for name, complete := range flagCompletions {
		if c.Flags().Lookup(name) != nil {
			_ = c.RegisterFlagCompletionFunc(name, complete) // once per command: cannot fail
		}
	}
	for _, s := range c.Commands() {
		addCompletions(s)
	}
}

// completeTaskNames completes a task name (--comm, --show) from the names
// of the threads running now, /proc/*/task/*/comm.
func completeTaskNames(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	paths, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*/comm")
	seen := map[string]bool{}
	var out []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		name := strings.TrimSuffix(string(b), "\n")
		if err != nil || seen[name] || !strings.HasPrefix(name, toComplete) || strings.ContainsAny(name, " \t") {
			continue // gone since, or a name the shell would split
		}
		seen[name] = true
		out = append(out, name)
	}
	sort.Strings(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeSLO completes an SLO's metric: METRIC= (the time is the user's).
func completeSLO(_ *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []string
	for _, m := range metric.Names() {
		out = append(out, m+"=")
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// cgroupRoot is where the cgroup v2 hierarchy is mounted.
var cgroupRoot = "/sys/fs/cgroup"

// completeCgroups completes a cgroup v2 path (--cgroup), one level at a
// time: the cgroups below the path typed so far.
func completeCgroups(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	parent := "/"
	if i := strings.LastIndex(toComplete, "/"); i >= 0 {
		parent = toComplete[:i+1]
	}
	entries, err := os.ReadDir(filepath.Join(cgroupRoot, parent))
	if err != nil || !strings.HasPrefix(parent, "/") {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, e := range entries {
		if p := parent + e.Name() + "/"; e.IsDir() && strings.HasPrefix(p, toComplete) {
			out = append(out, p)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}
