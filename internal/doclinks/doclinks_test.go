package doclinks

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every relative link of the project's Markdown leads to a file that
// exists, and each anchor to a heading of its file.
func TestRepositoryLinks(t *testing.T) {
	broken, err := Check("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Error(b)
	}
}

// The checker finds what it must on a small tree: a missing file, a
// missing heading; not a link in a code block or span, nor a web link.
func TestCheckFinds(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/a.md", "# Page A\n\n## The socket's mode, 0600\n")
	write("README.md", strings.Join([]string{
		"[ok](docs/a.md) [dir](docs) [anchor](docs/a.md#the-sockets-mode-0600) [web](https://example.org/x)",
		"[gone](docs/b.md)",
		"[bad anchor](docs/a.md#nope)",
		"`[in code](nowhere.md)`",
		"```", "[in a block](nowhere.md)", "```",
		"[self](#title)", "# Title",
	}, "\n"))
	broken, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range broken {
		got = append(got, b.String())
	}
	want := []string{"README.md:2: docs/b.md: no such file", "README.md:3: docs/a.md#nope: no heading #nope"}
	if !slices.Equal(got, want) {
		t.Fatalf("broken links:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The README stays a front page: at most 400 lines (issue 39: about 300),
// with the two set-up commands on its first screen (40 lines).
func TestReadmeIsAFrontPage(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) > 400 {
		t.Errorf("README.md has %d lines; at most 400 (move the rest to docs/)", len(lines))
	}
	first := strings.Join(lines[:min(40, len(lines))], "\n")
	for _, cmd := range []string{"make demo", "make test"} {
		if !strings.Contains(first, cmd) {
			t.Errorf("README.md's first 40 lines lack %q", cmd)
		}
	}
}
