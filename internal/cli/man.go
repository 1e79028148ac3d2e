package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The man pages are written here in roff from the command tree, the same
// source as --help: the synopsis, the Long prose, the flags with their
// pflag usages, the examples and the exit status. cobra/doc's GenMan was
// not used: its sections are fixed (no EXIT STATUS, no COMMANDS) and it
// reads the prose as Markdown, which folds the help's indented tables
// (Targets, Commands) into running text; the help's plain text maps onto
// roff directly. Sections follow rtla's pages.

// annSeeAlso is a command's related pages, besides rtscope(1).
const annSeeAlso = "rtscope:see-also"

// manSkip are the commands without a page of their own: cobra's, and
// version (described in rtscope(1)).
var manSkip = map[string]bool{"help": true, "completion": true, "version": true}

// ManPages are rtscope's man pages, by file name: rtscope.1, one
// rtscope-COMMAND.1 per command, and rtscope-serve.yaml.5.
func ManPages() map[string]string {
	root := NewRoot()
	pages := map[string]string{"rtscope.1": manPage(root)}
	for _, c := range subcommands(root) {
		if !manSkip[c.Name()] {
			pages["rtscope-"+c.Name()+".1"] = manPage(c)
		}
	}
	pages["rtscope-serve.yaml.5"] = serveYAMLPage()
	return pages
}

// manPage is c's page in section 1.
func manPage(c *cobra.Command) string {
	var b strings.Builder
	name := strings.ReplaceAll(c.CommandPath(), " ", "-")
	fmt.Fprintf(&b, ".TH %q 1 \"\" \"rtscope\" \"rtscope manual\"\n", strings.ToUpper(name))
	fmt.Fprintf(&b, ".SH NAME\n%s \\- %s\n", roffEscape(name), roffEscape(c.Short))
	b.WriteString(".SH SYNOPSIS\n")
	for _, u := range synopsis(c) {
		path := subPath(c, u)
		fmt.Fprintf(&b, "\\fB%s\\fR%s\n.br\n", roffEscape(path), roffEscape(strings.TrimPrefix(u, path)))
	}
	b.WriteString(".SH DESCRIPTION\n")
	b.WriteString(roffText(c.Long))
	if more := c.Annotations[annMore]; more != "" {
		b.WriteString(".PP\n" + roffText(more))
	}
	if subs := subcommands(c); len(subs) > 0 {
		b.WriteString(".SH COMMANDS\n")
		for _, s := range subs {
			ref := "\\fB" + roffEscape(s.Name()) + "\\fR"
			if !c.HasParent() && !manSkip[s.Name()] {
				ref = "\\fBrtscope\\-" + roffEscape(s.Name()) + "\\fR(1)"
			}
			fmt.Fprintf(&b, ".TP\n%s\n%s\n", ref, roffEscape(s.Short))
		}
	}
	if fs := docFlags(c); fs.HasFlags() {
		b.WriteString(".SH OPTIONS\n")
		fs.VisitAll(func(f *pflag.Flag) { b.WriteString(manFlag(f)) })
	}
	if c.Example != "" {
		b.WriteString(".SH EXAMPLES\n.nf\n.RS 2\n" + roffLines(strings.Split(dedent(c.Example), "\n")) + ".RE\n.fi\n")
	}
	if ex := c.Annotations[annExit]; ex != "" {
		b.WriteString(".SH EXIT STATUS\n" + roffText(ex))
	}
	b.WriteString(".SH SEE ALSO\n" + seeAlso(c) + "\n")
	return b.String()
}

// subPath is the command path that starts synopsis line u of c (c's or
// a subcommand's).
func subPath(c *cobra.Command, u string) string {
	for _, s := range c.Commands() {
		if p := s.CommandPath(); strings.HasPrefix(u, p+" ") || u == p {
			return p
		}
	}
	return c.CommandPath()
}

// seeAlso lists c's related pages: rtscope's with every command's, a
// command's with rtscope(1) and those it names.
func seeAlso(c *cobra.Command) string {
	var refs []string
	if !c.HasParent() {
		for _, s := range subcommands(c) {
			if !manSkip[s.Name()] {
				refs = append(refs, "\\fBrtscope\\-"+roffEscape(s.Name())+"\\fR(1)")
			}
		}
		refs = append(refs, "\\fBrtscope\\-serve.yaml\\fR(5)")
	} else {
		refs = append(refs, "\\fBrtscope\\fR(1)")
	}
	for _, r := range strings.Fields(c.Annotations[annSeeAlso]) {
		page, sect, _ := strings.Cut(strings.TrimSuffix(r, ","), "(")
		refs = append(refs, "\\fB"+roffEscape(page)+"\\fR("+sect)
	}
	return strings.Join(refs, ",\n")
}

// manFlag is one flag as a tagged paragraph, with the words --help gives it.
func manFlag(f *pflag.Flag) string {
	one := pflag.NewFlagSet("", pflag.ContinueOnError)
	one.AddFlag(f)
	line := strings.TrimSpace(one.FlagUsagesWrapped(0))
	names, usage, _ := strings.Cut(line, "  ")
	var tag []string
	for _, w := range strings.Fields(names) {
		if strings.HasPrefix(w, "-") {
			tag = append(tag, "\\fB"+roffEscape(strings.TrimSuffix(w, ","))+"\\fR")
		} else {
			tag[len(tag)-1] += " \\fI" + roffEscape(w) + "\\fR"
		}
	}
	return ".TP\n" + strings.Join(tag, ", ") + "\n" + roffEscape(strings.Join(strings.Fields(usage), " ")) + "\n"
}

// roffText sets plain help text: paragraphs at blank lines, its lines
// filled, indented lines (tables, examples) kept as they are.
func roffText(s string) string {
	var b strings.Builder
	var block []string
	flush := func() {
		if len(block) > 0 {
			b.WriteString(".nf\n.RS 2\n" + roffLines(strings.Split(dedent(strings.Join(block, "\n")), "\n")) + ".RE\n.fi\n")
			block = nil
		}
	}
	for i, para := range strings.Split(strings.Trim(s, "\n"), "\n\n") {
		if i > 0 {
			b.WriteString(".PP\n")
		}
		for _, l := range strings.Split(para, "\n") {
			if strings.HasPrefix(l, " ") {
				block = append(block, l)
				continue
			}
			flush()
			b.WriteString(roffLines([]string{l}))
		}
		flush()
	}
	return b.String()
}

// roffLines escapes lines, one roff line each.
func roffLines(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(roffEscape(l) + "\n")
	}
	return b.String()
}

// roffEscape escapes text for roff: backslashes, hyphens (minus signs in
// flags), and a control character at the start of a line.
func roffEscape(s string) string {
	s = strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// dedent removes the indentation all of s's lines share.
func dedent(s string) string {
	lines := strings.Split(s, "\n")
	least := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, " ")); least < 0 || n < least {
			least = n
		}
	}
	for i, l := range lines {
		if len(l) >= least && least > 0 {
			lines[i] = l[least:]
		}
	}
	return strings.Join(lines, "\n")
}
