package main

import "strings"

// timedResult: per-invocation maxima from an instrumented build.
type timedResult struct {
	Where            string
	RtsMax, FloorMax float64
}

func (t *timedResult) markdown(w *strings.Builder) {}
