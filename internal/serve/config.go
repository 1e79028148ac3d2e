package serve

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/rtscope/rtscope/internal/slo"
)

// Config is the agent's configuration file (YAML, docs/serve.md):
//
//	listen: 127.0.0.1:9717
//	archive: /var/lib/rtscope/windows
//	archive_max_mb: 64
//	targets:
//	  - comm: control
//	  - pid: 1234
//	  - tid: 5678
//	  - cgroup: /system.slice/control.service
//	slo:
//	  - latency=200us
//	  - 1234:cycle=1ms
//	intrusions: isolated     # or a CPU list, "2-3"
//	intrusions_allow: [control]
type Config struct {
	Listen  string         `yaml:"listen"`
	Archive string         `yaml:"archive"`        // directory of archived windows ("": none)
	ArchMB  int64          `yaml:"archive_max_mb"` // its size cap, MiB
	Targets []TargetConfig `yaml:"targets"`
	SLO     []string       `yaml:"slo"`
	// Intrusions: serve --intrusions, the CPUs whose intrusions are
	// counted ("isolated": the isolated and nohz_full ones); read at start
	// only (a reload does not attach or detach).
	Intrusions      string   `yaml:"intrusions"`
	IntrusionsAllow []string `yaml:"intrusions_allow"`
}

// TargetConfig is one target: exactly one of its fields.
type TargetConfig struct {
	Comm string `yaml:"comm" json:"comm,omitempty"`
	PID  int    `yaml:"pid" json:"pid,omitempty"`
	TID  int    `yaml:"tid" json:"tid,omitempty"`
	// Cgroup: a cgroup v2 path or a systemd unit name (target.Cgroup).
	Cgroup string `yaml:"cgroup" json:"cgroup,omitempty"`
}

// LoadConfig reads and validates a configuration file. Errors are one
// sentence naming the file and line.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return ParseConfig(path, b)
}

// ParseConfig parses and validates a configuration; name names it in
// errors.
func ParseConfig(name string, b []byte) (*Config, error) {
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) { // empty: nothing configured
		var te *yaml.TypeError
		if errors.As(err, &te) && len(te.Errors) > 0 {
			return nil, fmt.Errorf("config %s: %s", name, te.Errors[0])
		}
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	// Lines of the items, for the errors of the checks below.
	var root yaml.Node
	_ = yaml.Unmarshal(b, &root)
	tLines, sLines := itemLines(&root, "targets"), itemLines(&root, "slo")
	at := func(lines []int, i int) string {
		if i < len(lines) {
			return fmt.Sprintf("config %s line %d", name, lines[i])
		}
		return "config " + name
	}
	if c.ArchMB < 0 {
		return nil, fmt.Errorf("config %s line %d: archive_max_mb is a size in MiB above zero", name, keyLine(&root, "archive_max_mb"))
	}
	for i, t := range c.Targets {
		if err := t.Check(); err != nil {
			return nil, fmt.Errorf("%s: %v", at(tLines, i), err)
		}
	}
	for i, s := range c.SLO {
		if _, err := slo.Parse(s); err != nil {
			return nil, fmt.Errorf("%s: %v", at(sLines, i), err)
		}
	}
	return &c, nil
}

// itemLines returns the line of each item of the top-level sequence key.
func itemLines(root *yaml.Node, key string) []int {
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml.SequenceNode {
			var out []int
			for _, it := range m.Content[i+1].Content {
				out = append(out, it.Line)
			}
			return out
		}
	}
	return nil
}

// keyLine returns the line of a top-level key (0: not there).
func keyLine(root *yaml.Node, key string) int {
	if root.Kind != yaml.DocumentNode || len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return 0
	}
	m := root.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i].Line
		}
	}
	return 0
}
