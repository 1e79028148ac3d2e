package main

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestLookup(t *testing.T) {
	const doc = `{"schema":"rtscope.watch/v1","tasks":[
		{"tid":7,"comm":"irq/4-ttyS0","metrics":{"handler":{"count":3,"max_ns":12000}}},
		{"tid":9,"comm":"cyclictest","metrics":{"latency":{"count":10,"max_ns":123456789012,"min_ns":null}}}]}`
	dec := json.NewDecoder(bytes.NewReader([]byte(doc)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"schema":      "rtscope.watch/v1",
		"tasks.#":     "2",
		"tasks.1.tid": "9",
		"tasks[comm=cyclictest].metrics.latency.max_ns": "123456789012",
		"tasks[comm=cyclictest].metrics.latency.min_ns": "null",
		"tasks[comm^=irq/].metrics.handler.count":       "3",
		"tasks[tid=7].comm":                             "irq/4-ttyS0",
		"tasks[tid=9&comm^=cyc].metrics.latency.count":  "10",
		"tasks.0.metrics.handler":                       `{"count":3,"max_ns":12000}`,
	} {
		got, err := lookup(v, path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if s := format(got); s != want {
			t.Errorf("%s = %s, want %s", path, s, want)
		}
	}
	for _, path := range []string{"nope", "tasks.5", "tasks[comm=x]", "schema.x", "tasks[bad]", "tasks[tid=7&comm=cyclictest]", "tasks[tid=7&x]"} {
		if _, err := lookup(v, path); err == nil {
			t.Errorf("%s: want an error", path)
		}
	}
}
