package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
)

// maintainer is the package's Maintainer.
const maintainer = "rtscope developers <rtscope@users.noreply.github.com>"

// unitPath is where the package puts the systemd unit: the unit in
// contrib/ runs /usr/local/bin/rtscope (a hand install), the package's
// /usr/bin/rtscope.
const unitPath = "/usr/lib/systemd/system/rtscope.service"

// debVersion makes git describe's version a Debian one, which must start
// with a digit: "2f66e6d-dirty" becomes "0.0.0+git2f66e6d.dirty",
// "v1.2.0-3-gabc" becomes "1.2.0+3+gabc" (no Debian revision).
func debVersion(v string) string {
	v = regexp.MustCompile(`[^A-Za-z0-9.+~-]`).ReplaceAllString(v, ".")
	if regexp.MustCompile(`^v?[0-9]+\.[0-9]+`).MatchString(v) { // a release tag; a hash may start with a digit too
		return strings.ReplaceAll(strings.TrimPrefix(v, "v"), "-", "+")
	}
	return "0.0.0+git" + strings.ReplaceAll(v, "-", ".")
}

// buildDeb writes rtscope_VERSION_ARCH.deb into o.out and returns its path.
func buildDeb(o options) (string, error) {
	stage, err := os.MkdirTemp("", "rtscope-deb-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(stage) }() // generated copies only
	contents, err := debContents(o, stage)
	if err != nil {
		return "", err
	}
	info := nfpm.WithDefaults(&nfpm.Info{
		Name: "rtscope", Arch: o.arch, Platform: "linux", Version: debVersion(o.version), VersionSchema: "none",
		Section: "utils", Priority: "optional", Maintainer: maintainer,
		Homepage: "https://github.com/rtscope/rtscope",
		Description: "real-time health scope for Linux (eBPF)\n" +
			"rtscope watches chosen tasks with eBPF on an unmodified kernel and tells\n" +
			"whether they meet their deadlines and, when not, why: wakeup and timer\n" +
			"latency, response and cycle time, SLO violations, and the worst case of\n" +
			"each with its event trace and a verdict naming the cause. It includes\n" +
			"timerlat (as rtla timerlat and cyclictest), doctor (the machine's\n" +
			"real-time set-up) and serve, an agent exporting to Prometheus (its\n" +
			"systemd unit is installed disabled).",
		// The commit's time (SOURCE_DATE_EPOCH): the same commit gives the
		// same package, and no file is dated 1970 (lintian's ancient-file).
		MTime:        o.mtime,
		Overridables: nfpm.Overridables{Contents: contents},
	})
	if err := nfpm.PrepareForPackager(info, "deb"); err != nil {
		return "", err
	}
	pkg, err := nfpm.Get("deb")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(o.out, pkg.ConventionalFileName(info))
	var buf bytes.Buffer
	if err := pkg.Package(info, &buf); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, buf.Bytes(), 0o644)
}

// debContents lists the package's files, generating into stage what is
// not taken as it is: the unit with the package's binary path, gzipped
// man pages, the completion scripts.
func debContents(o options, stage string) (files.Contents, error) {
	file := func(src, dst string, mode os.FileMode) *files.Content {
		return &files.Content{Source: src, Destination: dst, FileInfo: &files.ContentFileInfo{Mode: mode}}
	}
	unit, err := os.ReadFile(filepath.Join(o.root, "contrib/systemd/rtscope.service"))
	if err != nil {
		return nil, err
	}
	unit = bytes.ReplaceAll(unit, []byte("/usr/local/bin/rtscope"), []byte("/usr/bin/rtscope"))
	if err := os.WriteFile(filepath.Join(stage, "rtscope.service"), unit, 0o644); err != nil {
		return nil, err
	}
	changelog := filepath.Join(stage, "changelog.gz")
	if err := writeChangelog(changelog, o); err != nil {
		return nil, err
	}
	copyright := filepath.Join(stage, "copyright")
	if err := writeCopyright(copyright, o); err != nil {
		return nil, err
	}
	overrides := filepath.Join(stage, "lintian-overrides")
	if err := os.WriteFile(overrides, []byte(lintianOverrides), 0o644); err != nil {
		return nil, err
	}
	c := files.Contents{
		file(o.bin, "/usr/bin/rtscope", 0o755),
		file(changelog, "/usr/share/doc/rtscope/changelog.gz", 0o644),
		file(copyright, "/usr/share/doc/rtscope/copyright", 0o644),
		file(overrides, "/usr/share/lintian/overrides/rtscope", 0o644),
		file(filepath.Join(stage, "rtscope.service"), unitPath, 0o644),
		{Source: filepath.Join(o.root, "contrib/serve.yaml"), Destination: "/etc/rtscope/serve.yaml", Type: files.TypeConfig,
			FileInfo: &files.ContentFileInfo{Mode: 0o644}},
		file(filepath.Join(o.root, "contrib/grafana/rtscope.json"), "/usr/share/rtscope/grafana/rtscope.json", 0o644),
		file(filepath.Join(o.root, "contrib/kubernetes/daemonset.yaml"), "/usr/share/rtscope/kubernetes/daemonset.yaml", 0o644),
		file(filepath.Join(o.root, "README.md"), "/usr/share/doc/rtscope/README.md", 0o644),
	}
	docs, err := filepath.Glob(filepath.Join(o.root, "docs/*.md"))
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		c = append(c, file(d, "/usr/share/doc/rtscope/docs/"+filepath.Base(d), 0o644))
	}
	man, err := manPages(o.root, stage)
	if err != nil {
		return nil, err
	}
	comp, err := completions(o, stage)
	if err != nil {
		return nil, err
	}
	return append(append(c, man...), comp...), nil
}

// manSection matches a man page's file name: rtscope-watch.1.
var manSection = regexp.MustCompile(`\.([1-8])$`)

// manPages gzips the man pages under root/man (man/*.N or man/manN/*.N),
// when there are any, into /usr/share/man/manN.
func manPages(root, stage string) (files.Contents, error) {
	var out files.Contents
	err := filepath.WalkDir(filepath.Join(root, "man"), func(path string, d os.DirEntry, err error) error {
		if errors.Is(err, os.ErrNotExist) {
			return filepath.SkipDir // no man pages generated: none packaged
		}
		if err != nil || d.IsDir() {
			return err
		}
		m := manSection.FindStringSubmatch(d.Name())
		if m == nil {
			return nil
		}
		gz := filepath.Join(stage, d.Name()+".gz")
		if err := gzipFile(path, gz); err != nil {
			return err
		}
		out = append(out, &files.Content{Source: gz, Destination: "/usr/share/man/man" + m[1] + "/" + d.Name() + ".gz",
			FileInfo: &files.ContentFileInfo{Mode: 0o644}})
		return nil
	})
	return out, err
}

// gzipFile writes src gzipped to dst, without a name or time (as gzip -n,
// which Debian asks of man pages).
func gzipFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(b); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}

// completionPaths are where Debian's shells look for a package's
// completion scripts.
var completionPaths = map[string]string{
	"bash": "/usr/share/bash-completion/completions/rtscope",
	"zsh":  "/usr/share/zsh/vendor-completions/_rtscope",
	"fish": "/usr/share/fish/vendor_completions.d/rtscope.fish",
}

// completions asks an rtscope that runs here for its completion scripts
// (rtscope completion SHELL); a binary without that command, or none that
// runs here, gives none.
func completions(o options, stage string) (files.Contents, error) {
	host := o.host
	if host == "" && o.arch == runtime.GOARCH {
		host = o.bin
	}
	if host == "" {
		return nil, nil
	}
	var out files.Contents
	for _, sh := range []string{"bash", "fish", "zsh"} {
		script, err := exec.Command(host, "completion", sh).Output()
		if err != nil || len(script) == 0 {
			fmt.Fprintf(os.Stderr, "pack deb: no %s completion (%s completion %s: %v): packaged without it\n", sh, host, sh, err)
			continue
		}
		p := filepath.Join(stage, "completion."+sh)
		if err := os.WriteFile(p, script, 0o644); err != nil {
			return nil, err
		}
		out = append(out, &files.Content{Source: p, Destination: completionPaths[sh], FileInfo: &files.ContentFileInfo{Mode: 0o644}})
	}
	return out, nil
}

// lintianOverrides are the package's lintian overrides, each with its
// reason.
const lintianOverrides = `# Go, built with CGO_ENABLED=0 on purpose: one binary that runs on any
# target (boards, containers FROM scratch) whatever its libc.
rtscope: statically-linked-binary [usr/bin/rtscope]
`

// writeChangelog writes the Debian changelog of a native package built
// from a commit: one entry, pointing at the project's history.
func writeChangelog(path string, o options) error {
	text := fmt.Sprintf("rtscope (%s) unstable; urgency=medium\n\n"+
		"  * Built from rtscope %s.\n  * The changes are in the project's git history.\n\n"+
		" -- %s  %s\n", debVersion(o.version), o.version, maintainer, o.mtime.UTC().Format(time.RFC1123Z))
	src := path + ".txt"
	if err := os.WriteFile(src, []byte(text), 0o644); err != nil {
		return err
	}
	return gzipFile(src, path)
}
