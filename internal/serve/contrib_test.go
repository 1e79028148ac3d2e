package serve

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// writable tells whether path is at or under one of dirs.
func writable(path string, dirs []string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, d+"/") {
			return true
		}
	}
	return false
}

// The systemd unit gives the agent writable directories where it really
// writes (ProtectSystem=strict leaves the rest read-only): the control
// socket's directory (DefaultSocket) and the archive of the documented
// configuration.
func TestSystemdUnitPaths(t *testing.T) {
	b, err := os.ReadFile("../../contrib/systemd/rtscope.service")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	var exec string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "RuntimeDirectory":
			dirs = append(dirs, "/run/"+v)
		case "StateDirectory":
			dirs = append(dirs, "/var/lib/"+v)
		case "ExecStart":
			exec = v
		}
	}
	if strings.Contains(exec, "--socket") || strings.Contains(exec, "--archive") {
		t.Fatalf("ExecStart %q sets paths of its own: check them here", exec)
	}
	if d := filepath.Dir(DefaultSocket); !slices.Contains(dirs, d) {
		t.Errorf("the socket's directory %s is not a RuntimeDirectory of the unit (writable: %v)", d, dirs)
	}
	// The archive the unit's comments and the configuration's doc name.
	if !bytes.Contains(b, []byte("archive: /var/lib/rtscope/windows")) || !writable("/var/lib/rtscope/windows", dirs) {
		t.Errorf("archive /var/lib/rtscope/windows is not named or not writable (writable: %v)", dirs)
	}
}

// The DaemonSet's read-only root filesystem has writable volumes where the
// agent writes: the socket's parent (the agent creates DefaultSocket's
// directory mode 0700 itself: an emptyDir there would be 0777 and refused)
// and the archive of its ConfigMap; the configuration is mounted where
// --config reads it.
func TestDaemonSetPaths(t *testing.T) {
	b, err := os.ReadFile("../../contrib/kubernetes/daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type mount struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	}
	var cfgText string
	var ds struct {
		Kind string `yaml:"kind"`
		Data map[string]string
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args            []string `yaml:"args"`
						VolumeMounts    []mount  `yaml:"volumeMounts"`
						SecurityContext struct {
							ReadOnlyRootFilesystem bool `yaml:"readOnlyRootFilesystem"`
						} `yaml:"securityContext"`
					} `yaml:"containers"`
					Volumes []map[string]any `yaml:"volumes"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var doc struct {
			Kind string            `yaml:"kind"`
			Data map[string]string `yaml:"data"`
		}
		var node yaml.Node
		if err := dec.Decode(&node); err != nil {
			break
		}
		if err := node.Decode(&doc); err != nil {
			t.Fatal(err)
		}
		switch doc.Kind {
		case "ConfigMap":
			cfgText = doc.Data["serve.yaml"]
		case "DaemonSet":
			if err := node.Decode(&ds); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg, err := ParseConfig("serve.yaml", []byte(cfgText))
	if err != nil {
		t.Fatalf("the ConfigMap's serve.yaml: %v", err)
	}
	if len(ds.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(ds.Spec.Template.Spec.Containers))
	}
	c := ds.Spec.Template.Spec.Containers[0]
	if !c.SecurityContext.ReadOnlyRootFilesystem {
		t.Fatal("the container's root filesystem is writable: this test assumes it is not")
	}
	var rw, all []string
	for _, m := range c.VolumeMounts {
		all = append(all, m.MountPath)
		if !m.ReadOnly {
			rw = append(rw, m.MountPath)
		}
	}
	i := slices.Index(c.Args, "--config")
	if i < 0 || i+1 >= len(c.Args) || !writable(filepath.Dir(c.Args[i+1]), all) {
		t.Errorf("--config in %v is not on a mounted volume (%v)", c.Args, all)
	}
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--socket") || strings.HasPrefix(a, "--archive") {
			t.Fatalf("args %v set paths of their own: check them here", c.Args)
		}
	}
	sockDir := filepath.Dir(DefaultSocket)
	if slices.Contains(all, sockDir) {
		t.Errorf("a volume is mounted at %s itself: its mode is the volume's, which the agent refuses unless only root can write it", sockDir)
	}
	if !writable(filepath.Dir(sockDir), rw) {
		t.Errorf("the socket's directory %s cannot be created: no writable volume at or above %s (writable: %v)", sockDir, filepath.Dir(sockDir), rw)
	}
	if cfg.Archive == "" || !writable(filepath.Dir(cfg.Archive), rw) {
		t.Errorf("archive %q is not on a writable volume (writable: %v)", cfg.Archive, rw)
	}
}

// The example configuration the Debian package installs as
// /etc/rtscope/serve.yaml parses, names no target (the packaged agent
// starts idle) and keeps its archive in the unit's StateDirectory.
func TestExampleConfig(t *testing.T) {
	c, err := LoadConfig("../../contrib/serve.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Targets) != 0 || len(c.SLO) != 0 {
		t.Errorf("the example configuration names targets %v and SLOs %v; the packaged agent must start idle", c.Targets, c.SLO)
	}
	if c.Listen != DefaultListen || !strings.HasPrefix(c.Archive, "/var/lib/rtscope/") || c.ArchMB <= 0 {
		t.Errorf("the example configuration: listen %q (want %s), archive %q (want under /var/lib/rtscope), archive_max_mb %d",
			c.Listen, DefaultListen, c.Archive, c.ArchMB)
	}
}
