package htmlreport

import (
	"encoding/xml"
	"io"
	"regexp"
	"strings"
	"testing"
)

// node is an element (or, with tag "#text", a text) of a parsed page.
type node struct {
	tag    string
	attr   map[string]string
	text   string
	kids   []*node
	parent *node
}

// rawText matches the elements whose content is not markup: the tests
// check the script in a browser, not here.
var rawText = regexp.MustCompile(`(?is)(<(script|style)\b[^>]*>).*?(</(script|style)>)`)

// parseHTML reads a page into a tree with encoding/xml in its lenient
// (HTML) mode, after emptying the script and style elements. It is no
// HTML5 parser (golang.org/x/net/html is not a dependency of the module),
// but the page is written so that it reads as well-formed: the test
// fails on anything it cannot read, and the browser test parses it for
// real.
func parseHTML(t *testing.T, page string) *node {
	t.Helper()
	return parse(t, rawText.ReplaceAllString(page, "$1$3"))
}

// parseDOM reads the DOM a browser serialised: HTML serialisation leaves
// < and > unescaped in attribute values, which XML refuses.
func parseDOM(t *testing.T, dom string) *node {
	t.Helper()
	return parse(t, escapeAttrs(rawText.ReplaceAllString(dom, "$1$3")))
}

// escapeAttrs escapes < and > inside the quoted attribute values of s
// (which holds no script nor style).
func escapeAttrs(s string) string {
	var b strings.Builder
	inTag, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '<' {
				b.WriteString("&lt;")
				continue
			} else if c == '>' {
				b.WriteString("&gt;")
				continue
			}
		case inTag:
			if c == '"' || c == '\'' {
				quote = c
			} else if c == '>' {
				inTag = false
			}
		case c == '<':
			inTag = true
		}
		b.WriteByte(c)
	}
	return b.String()
}

func parse(t *testing.T, page string) *node {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(page))
	d.Strict = false
	d.AutoClose = xml.HTMLAutoClose
	d.Entity = xml.HTMLEntity
	root := &node{tag: "#root"}
	cur := root
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("page does not parse: %v", err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			n := &node{tag: strings.ToLower(tk.Name.Local), attr: map[string]string{}, parent: cur}
			for _, a := range tk.Attr {
				name := a.Name.Local
				if a.Name.Space != "" {
					name = a.Name.Space + ":" + name
				}
				n.attr[strings.ToLower(name)] = a.Value
			}
			cur.kids = append(cur.kids, n)
			cur = n
		case xml.EndElement:
			name := strings.ToLower(tk.Name.Local)
			for n := cur; n != nil && n != root; n = n.parent {
				if n.tag == name {
					cur = n.parent
					break
				}
			}
		case xml.CharData:
			cur.kids = append(cur.kids, &node{tag: "#text", text: string(tk), parent: cur})
		}
	}
	return root
}

// all returns the elements under n (n included) with the tag and every
// class of sel ("svg.hist.big", "tr", ".lane").
func (n *node) all(sel string) []*node {
	parts := strings.Split(sel, ".")
	tag, classes := parts[0], parts[1:]
	var out []*node
	var walk func(*node)
	walk = func(x *node) {
		if x.tag != "#text" && (tag == "" || x.tag == tag) && x.hasClasses(classes) {
			out = append(out, x)
		}
		for _, k := range x.kids {
			walk(k)
		}
	}
	walk(n)
	return out
}

// first is the first of all(sel), nil when none.
func (n *node) first(sel string) *node {
	if a := n.all(sel); len(a) > 0 {
		return a[0]
	}
	return nil
}

// byID is the element of an id, nil when none.
func (n *node) byID(id string) *node {
	var found *node
	var walk func(*node)
	walk = func(x *node) {
		if found == nil && x.attr["id"] == id && x.tag != "#text" {
			found = x
		}
		for _, k := range x.kids {
			walk(k)
		}
	}
	walk(n)
	return found
}

func (n *node) hasClasses(want []string) bool {
	have := strings.Fields(n.attr["class"])
	for _, w := range want {
		ok := false
		for _, h := range have {
			ok = ok || h == w
		}
		if !ok {
			return false
		}
	}
	return true
}

// textContent is the text under n, as a browser's textContent.
func (n *node) textContent() string {
	var b strings.Builder
	var walk func(*node)
	walk = func(x *node) {
		if x.tag == "#text" {
			b.WriteString(x.text)
		}
		for _, k := range x.kids {
			walk(k)
		}
	}
	walk(n)
	return b.String()
}

// cells are the text of the cells of a table row.
func (n *node) cells() []string {
	var out []string
	for _, k := range n.kids {
		if k.tag == "td" || k.tag == "th" {
			out = append(out, strings.TrimSpace(k.textContent()))
		}
	}
	return out
}
