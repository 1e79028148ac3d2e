package serve

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/rtscope/rtscope/internal/slo"
	"github.com/rtscope/rtscope/internal/target"
)

// Config is the agent's configuration file (YAML, docs/serve.md):
//
//	listen: 127.0.0.1:9717
//	targets:
//	  - comm: control
//	  - pid: 1234
//	  - tid: 5678
//	slo:
//	  - latency=200us
//	  - 1234:cycle=1ms
type Config struct {
	Listen  string         `yaml:"listen"`
	Targets []TargetConfig `yaml:"targets"`
	SLO     []string       `yaml:"slo"`
}

// TargetConfig is one target: exactly one of its fields.
type TargetConfig struct {
	Comm string `yaml:"comm"`
	PID  int    `yaml:"pid"`
	TID  int    `yaml:"tid"`
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
	for i, t := range c.Targets {
		n := 0
		for _, set := range []bool{t.Comm != "", t.PID != 0, t.TID != 0} {
			if set {
				n++
			}
		}
		if n != 1 {
			return nil, fmt.Errorf("%s: a target has exactly one of comm, pid or tid", at(tLines, i))
		}
		switch {
		case len(t.Comm) > target.CommLen:
			return nil, fmt.Errorf("%s: comm %q has more than %d characters (the kernel's limit)", at(tLines, i), t.Comm, target.CommLen)
		case t.PID < 0 || t.TID < 0:
			return nil, fmt.Errorf("%s: a pid or tid is a positive number", at(tLines, i))
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

// Merge adds the file's targets and SLOs to those of the flags.
func (c *Config) Merge(spec *target.Spec, slos []string) []string {
	for _, t := range c.Targets {
		switch {
		case t.Comm != "":
			spec.Comms = append(spec.Comms, t.Comm)
		case t.PID != 0:
			spec.PIDs = append(spec.PIDs, t.PID)
		case t.TID != 0:
			spec.TIDs = append(spec.TIDs, t.TID)
		}
	}
	return append(append([]string(nil), slos...), c.SLO...)
}
