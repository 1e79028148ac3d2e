package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// cmdGet prints the value at a path in a JSON file, for shell scripts:
// strings unquoted, numbers as written, null as "null", objects and arrays
// as compact JSON. A path that does not exist is an error (exit 1), so a
// renamed field fails a test loudly instead of comparing against "".
func cmdGet(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: vmkit get FILE PATH")
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("%s is not JSON: %v", args[0], err)
	}
	v, err := lookup(doc, args[1])
	if err != nil {
		return err
	}
	fmt.Println(format(v))
	return nil
}

// lookup walks a dot-separated path. Each step is an object key, an array
// index, "#" (length of an array or object), or an array filter: the
// first element meeting every condition of "KEY=VALUE" (KEY equals VALUE)
// and "KEY^=PREFIX" (KEY starts with PREFIX) joined by "&". A filter may
// follow a key in brackets: "tasks[comm=cyclictest].metrics.latency.max_ns",
// "events[type=switch&next_tid=42].prev_comm".
func lookup(doc any, path string) (any, error) {
	cur := doc
	for _, step := range splitPath(path) {
		next, err := stepInto(cur, step)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		cur = next
	}
	return cur, nil
}

// splitPath splits on dots outside brackets and turns "a[f]" into "a", "f".
func splitPath(path string) []string {
	var steps []string
	var cur strings.Builder
	depth := 0
	flush := func() {
		if cur.Len() > 0 {
			steps = append(steps, cur.String())
			cur.Reset()
		}
	}
	for _, r := range path {
		switch {
		case r == '[' && depth == 0:
			flush()
			depth++
		case r == ']' && depth == 1:
			flush()
			depth--
		case r == '.' && depth == 0:
			flush()
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	return steps
}

func stepInto(cur any, step string) (any, error) {
	switch c := cur.(type) {
	case map[string]any:
		if step == "#" {
			return json.Number(strconv.Itoa(len(c))), nil
		}
		v, ok := c[step]
		if !ok {
			return nil, fmt.Errorf("no key %q", step)
		}
		return v, nil
	case []any:
		if step == "#" {
			return json.Number(strconv.Itoa(len(c))), nil
		}
		if i, err := strconv.Atoi(step); err == nil {
			if i < 0 || i >= len(c) {
				return nil, fmt.Errorf("index %d out of range (length %d)", i, len(c))
			}
			return c[i], nil
		}
		conds, err := parseFilter(step)
		if err != nil {
			return nil, err
		}
		for _, e := range c {
			if m, ok := e.(map[string]any); ok && matches(m, conds) {
				return e, nil
			}
		}
		return nil, fmt.Errorf("no element with %s", step)
	default:
		return nil, fmt.Errorf("cannot take %q of a %s", step, kind(cur))
	}
}

type cond struct {
	key, value string
	prefix     bool
}

// parseFilter reads "KEY=VALUE" or "KEY^=PREFIX" conditions joined by "&".
func parseFilter(step string) ([]cond, error) {
	var conds []cond
	for _, part := range strings.Split(step, "&") {
		if i := strings.Index(part, "^="); i > 0 {
			conds = append(conds, cond{part[:i], part[i+2:], true})
		} else if i := strings.Index(part, "="); i > 0 {
			conds = append(conds, cond{part[:i], part[i+1:], false})
		} else {
			return nil, fmt.Errorf("%q is not an index or KEY=VALUE filter", step)
		}
	}
	return conds, nil
}

func matches(m map[string]any, conds []cond) bool {
	for _, c := range conds {
		got, ok := m[c.key]
		if !ok {
			return false
		}
		s := format(got)
		if s != c.value && !(c.prefix && strings.HasPrefix(s, c.value)) {
			return false
		}
	}
	return true
}

func format(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "bool"
	}
	return "value"
}
