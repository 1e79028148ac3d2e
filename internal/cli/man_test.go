package cli

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/rtscope/rtscope/internal/serve"
)

var update = flag.Bool("update", false, "rewrite the man pages under man/ (make man)")

// manDir holds the checked-in pages.
const manDir = "../../man"

// The checked-in man pages are those the command tree generates: a new
// flag, command or text fails here until 'make man' writes them anew.
func TestManPages(t *testing.T) {
	pages := ManPages()
	if *update {
		if err := os.MkdirAll(manDir, 0o755); err != nil {
			t.Fatal(err)
		}
		old, _ := filepath.Glob(filepath.Join(manDir, "*.[15]"))
		for _, p := range old {
			if _, ok := pages[filepath.Base(p)]; !ok {
				_ = os.Remove(p)
			}
		}
		for name, text := range pages {
			if err := os.WriteFile(filepath.Join(manDir, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, want := range []string{"rtscope.1", "rtscope-watch.1", "rtscope-timerlat.1", "rtscope-serve.1", "rtscope-ctl.1",
		"rtscope-doctor.1", "rtscope-scenario.1", "rtscope-demo.1", "rtscope-serve.yaml.5"} {
		if _, ok := pages[want]; !ok {
			t.Errorf("no page %s", want)
		}
	}
	files, _ := filepath.Glob(filepath.Join(manDir, "*.[15]"))
	if len(files) != len(pages) {
		t.Errorf("%d pages under man/, %d generated: run make man", len(files), len(pages))
	}
	for name, text := range pages {
		got, err := os.ReadFile(filepath.Join(manDir, name))
		if err != nil || string(got) != text {
			t.Errorf("man/%s differs from the generated page (%v): run make man", name, err)
		}
		for _, sect := range []string{".SH NAME\n", ".SH SYNOPSIS\n", ".SH DESCRIPTION\n", ".SH SEE ALSO\n"} {
			if !strings.Contains(text, sect) {
				t.Errorf("%s: no %q", name, sect)
			}
		}
		if strings.HasSuffix(name, ".1") && (!strings.Contains(text, ".SH EXIT STATUS\n") || !strings.Contains(text, ".SH EXAMPLES\n")) {
			t.Errorf("%s: no EXIT STATUS or EXAMPLES", name)
		}
	}
}

var (
	helpFlag = regexp.MustCompile(`(?m)^ {2,6}(?:-[[:alnum:]], )?--([a-z0-9-]+)`)
	manFlagR = regexp.MustCompile(`(?m)^(?:\\fB-[[:alnum:]]\\fR, )?\\fB--([a-z0-9-]+)\\fR`)
)

// Every flag that rtscope COMMAND --help shows is in the command's man
// page, under OPTIONS, and the other way round (timerlat: hist's help,
// which has top's flags and its own).
func TestManFlagsAgreeWithHelp(t *testing.T) {
	pages := ManPages()
	root := NewRoot()
	for _, c := range append([]*cobra.Command{root}, subcommands(root)...) {
		if c.HasParent() && manSkip[c.Name()] {
			continue
		}
		args, name := []string{"--help"}, "rtscope.1"
		if c.HasParent() {
			args, name = []string{c.Name(), "--help"}, "rtscope-"+c.Name()+".1"
		}
		if c.Name() == "timerlat" {
			args = []string{"timerlat", "hist", "--help"}
		}
		code, help, _ := mainOutput(t, args...)
		if code != 0 {
			t.Fatalf("rtscope %s: status %d", strings.Join(args, " "), code)
		}
		inHelp := flagNames(helpFlag, help)
		_, opts, _ := strings.Cut(pages[name], ".SH OPTIONS\n")
		opts, _, _ = strings.Cut(opts, "\n.SH ")
		inMan := flagNames(manFlagR, strings.ReplaceAll(opts, `\-`, "-"))
		if len(inHelp) == 0 && c.Name() != "scenario" || !reflect.DeepEqual(inHelp, inMan) {
			t.Errorf("%s: --help's flags %v, the page's %v", name, inHelp, inMan)
		}
	}
}

// flagNames are the distinct flag names re finds in text, sorted.
func flagNames(re *regexp.Regexp, text string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		if !seen[m[1]] && m[1] != "help" {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	sort.Strings(out)
	return out
}

// rtscope-serve.yaml(5) documents every key of serve's configuration
// file, and no key the file does not have.
func TestServeYAMLKeys(t *testing.T) {
	var keys []string
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			keys = append(keys, prefix+tag)
			if f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct {
				walk(prefix+tag+".", f.Type.Elem())
			}
		}
	}
	walk("", reflect.TypeOf(serve.Config{}))
	var documented []string
	for _, k := range serveConfigKeys {
		documented = append(documented, k.path)
	}
	sort.Strings(keys)
	sort.Strings(documented)
	if !reflect.DeepEqual(keys, documented) {
		t.Errorf("serve.Config's keys %v, rtscope-serve.yaml(5)'s %v", keys, documented)
	}
	// The page's example is a configuration serve takes.
	if _, err := serve.ParseConfig("example", []byte(serveYAMLExample)); err != nil {
		t.Errorf("the page's example: %v", err)
	}
}
