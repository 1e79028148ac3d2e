// Package doclinks checks the project's Markdown: every relative link
// ([text](path) or [text](path#anchor)) names a file or directory that
// exists, and every anchor a heading of its file, so that moving text
// between README.md and docs/ cannot leave a reader at a dead link.
package doclinks

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Broken is a link that leads nowhere.
type Broken struct {
	File   string // the Markdown file, relative to the walked root
	Line   int
	Target string // as written
	Why    string
}

func (b Broken) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", b.File, b.Line, b.Target, b.Why)
}

// link matches an inline link's target; images too.
var link = regexp.MustCompile(`\]\(([^()\s]+)\)`)

// inlineCode matches a code span, whose brackets are no link.
var inlineCode = regexp.MustCompile("`[^`]*`")

// Check walks the Markdown files under root (hidden directories, such as
// .cache and .git, skipped) and returns their broken relative links.
func Check(root string) ([]Broken, error) {
	var out []Broken
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".md") {
			return nil
		}
		b, err := checkFile(root, path)
		out = append(out, b...)
		return err
	})
	return out, err
}

// checkFile returns the broken links of one file.
func checkFile(root, path string) ([]Broken, error) {
	links, err := Links(path)
	if err != nil {
		return nil, err
	}
	rel, _ := filepath.Rel(root, path)
	var out []Broken
	for _, l := range links {
		if why := resolve(path, l.Target); why != "" {
			out = append(out, Broken{File: filepath.ToSlash(rel), Line: l.Line, Target: l.Target, Why: why})
		}
	}
	return out, nil
}

// Link is a link's target and its line.
type Link struct {
	Line   int
	Target string
}

// Links returns the links of a Markdown file outside code blocks and code
// spans.
func Links(path string) ([]Link, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	var out []Link
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	fence := false
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		for _, m := range link.FindAllStringSubmatch(inlineCode.ReplaceAllString(line, ""), -1) {
			out = append(out, Link{Line: n, Target: m[1]})
		}
	}
	return out, sc.Err()
}

// resolve says why target, linked from the file at path, leads nowhere
// ("" when it leads somewhere). Links with a scheme are not followed.
func resolve(path, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	file, anchor, _ := strings.Cut(target, "#")
	dest := path
	if file != "" {
		dest = filepath.Join(filepath.Dir(path), filepath.FromSlash(file))
		st, err := os.Stat(dest)
		if err != nil {
			return "no such file"
		}
		if st.IsDir() {
			return ""
		}
	}
	if anchor == "" || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	slugs, err := Headings(dest)
	if err != nil {
		return err.Error()
	}
	if !slugs[anchor] {
		return "no heading #" + anchor
	}
	return ""
}

// Headings returns the anchors of a Markdown file's headings, made as
// GitHub makes them: lower case, punctuation dropped, spaces to hyphens.
func Headings(path string) (map[string]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	fence := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		out[Slug(strings.TrimLeft(line, "# "))] = true
	}
	return out, nil
}

// Slug is a heading's anchor.
func Slug(heading string) string {
	var s strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			s.WriteRune('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127:
			s.WriteRune(r)
		}
	}
	return s.String()
}
