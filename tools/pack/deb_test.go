package main

import (
	"debug/buildinfo"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestDebVersion(t *testing.T) {
	for in, want := range map[string]string{
		"2f66e6d-dirty":     "0.0.0+git2f66e6d.dirty",
		"3944a29":           "0.0.0+git3944a29",
		"v1.2.0-3-gabcdef0": "1.2.0+3+gabcdef0",
		"1.0":               "1.0",
		"x/y z":             "0.0.0+gitx.y.z",
	} {
		if got := debVersion(in); got != want {
			t.Errorf("debVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

// The package built from this machine's binary: its control fields, its
// files (the binary, the unit running /usr/bin/rtscope, the example
// configuration as a conffile, the dashboard, the docs, man pages when
// man/ has them), and a clean install, run and purge in an empty root
// with dpkg --root (no maintainer scripts, so none runs chrooted):
// nothing is left behind but dpkg's own database.
func TestDeb(t *testing.T) {
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		missing(t, "no dpkg-deb here: the package is checked where Debian's tools are")
	}
	deb, err := buildDeb(testOptions(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if want := "rtscope_1.2.0+3+gabcdef0_" + runtime.GOARCH + ".deb"; filepath.Base(deb) != want {
		t.Errorf("package file %s, want %s", filepath.Base(deb), want)
	}
	for field, want := range map[string]string{"Package": "rtscope", "Version": "1.2.0+3+gabcdef0",
		"Architecture": runtime.GOARCH, "Section": "utils"} {
		if got := strings.TrimSpace(run(t, "dpkg-deb", "-f", deb, field)); got != want {
			t.Errorf("control %s: %q, want %q", field, got, want)
		}
	}
	listing := run(t, "dpkg-deb", "-c", deb)
	want := []string{"./usr/bin/rtscope", "./usr/lib/systemd/system/rtscope.service", "./etc/rtscope/serve.yaml",
		"./usr/share/doc/rtscope/copyright", "./usr/share/doc/rtscope/changelog.gz",
		"./usr/share/bash-completion/completions/rtscope", "./usr/share/zsh/vendor-completions/_rtscope",
		"./usr/share/fish/vendor_completions.d/rtscope.fish",
		"./usr/share/rtscope/grafana/rtscope.json", "./usr/share/doc/rtscope/README.md", "./usr/share/doc/rtscope/docs/serve.md"}
	pages, _ := filepath.Glob(filepath.Join(root, "man", "*.[1-8]"))
	sub, _ := filepath.Glob(filepath.Join(root, "man", "*", "*.[1-8]")) // man/man1/...
	pages = append(pages, sub...)
	for _, p := range pages {
		want = append(want, "./usr/share/man/man"+p[len(p)-1:]+"/"+filepath.Base(p)+".gz")
	}
	for _, w := range want {
		if !strings.Contains(listing, " "+w+"\n") {
			t.Errorf("the package lacks %s:\n%s", w, listing)
		}
	}
	if !strings.Contains(listing, "-rwxr-xr-x root/root") {
		t.Errorf("no executable owned by root in the package:\n%s", listing)
	}
	ctl := t.TempDir()
	run(t, "dpkg-deb", "-e", deb, ctl)
	if b, _ := os.ReadFile(filepath.Join(ctl, "conffiles")); strings.TrimSpace(string(b)) != "/etc/rtscope/serve.yaml" {
		t.Errorf("conffiles %q, want /etc/rtscope/serve.yaml", b)
	}
	installAndPurge(t, deb)
}

// installAndPurge installs deb into an empty root, runs what it installed
// and purges it.
func installAndPurge(t *testing.T, deb string) {
	r := installRoot(t, deb)
	unit, err := os.ReadFile(filepath.Join(r, "usr/lib/systemd/system/rtscope.service"))
	if err != nil || !strings.Contains(string(unit), "\nExecStart=/usr/bin/rtscope serve --config /etc/rtscope/serve.yaml\n") {
		t.Errorf("the installed unit does not run the packaged binary (%v):\n%s", err, unit)
	}
	if out := run(t, filepath.Join(r, "usr/bin/rtscope"), "version"); !strings.HasPrefix(out, "rtscope ") {
		t.Errorf("the installed rtscope version: %q", out)
	}
	// doctor's exit status is 2 when a check fails (this VM's preemption
	// model does): 1 would be an error of rtscope's own.
	doc := exec.Command(filepath.Join(r, "usr/bin/rtscope"), "doctor", "--bpf=false", "--sample", "100ms")
	if out, err := doc.Output(); doc.ProcessState == nil || doc.ProcessState.ExitCode() == 1 || !strings.Contains(string(out), "summary:") {
		t.Errorf("the installed rtscope doctor: %v\n%s", err, out)
	}
	run(t, "dpkg", "--root="+r, "--force-not-root", "-P", "rtscope")
	var left []string
	_ = filepath.WalkDir(r, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(r, p)
		if err == nil && !d.IsDir() && !strings.HasPrefix(rel, "var/lib/dpkg/") {
			left = append(left, rel)
		}
		return err
	})
	if len(left) > 0 {
		t.Errorf("purged, the package left %v", left)
	}
	if st := run(t, "dpkg", "--root="+r, "-l"); slices.ContainsFunc(strings.Split(st, "\n"), func(l string) bool {
		return strings.HasPrefix(l, "ii  rtscope") || strings.HasPrefix(l, "rc  rtscope")
	}) {
		t.Errorf("dpkg still lists rtscope after the purge:\n%s", st)
	}
}

// installRoot installs deb into an empty root with dpkg --root (no
// maintainer scripts, so none runs chrooted) and returns the root.
func installRoot(t *testing.T, deb string) string {
	t.Helper()
	r := t.TempDir()
	for _, d := range []string{"var/lib/dpkg/updates", "var/lib/dpkg/info"} {
		if err := os.MkdirAll(filepath.Join(r, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"var/lib/dpkg/status", "var/lib/dpkg/available"} {
		if err := os.WriteFile(filepath.Join(r, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run(t, "dpkg", "--root="+r, "--force-not-root", "-i", deb)
	return r
}

// lintian finds no error or warning in the package (information tags
// aside: lintian shows them only when asked); the statically linked
// binary is overridden in the package, with its reason.
func TestDebLintian(t *testing.T) {
	if _, err := exec.LookPath("lintian"); err != nil {
		missing(t, "no lintian here (make test-pack installs it)")
	}
	deb, err := buildDeb(testOptions(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("lintian", "--tag-display-limit", "0", deb).CombinedOutput() // its status says tags were found
	var allowed []string
	if pages, _ := filepath.Glob(filepath.Join(root, "man", "*.[1-8]")); len(pages) == 0 {
		if sub, _ := filepath.Glob(filepath.Join(root, "man", "*", "*.[1-8]")); len(sub) == 0 {
			allowed = append(allowed, "no-manual-page")
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasSuffix(f[0], ":") || len(f[0]) != 2 { // "E: rtscope: TAG ..."
			continue
		}
		if !slices.Contains(allowed, f[2]) {
			t.Errorf("lintian: %s", line)
		}
	}
}

// The package's copyright file is DEP-5: every paragraph after the header
// has Files, Copyright and License; bpf/ is GPL-2; every Go module the
// binary's build information lists, and Go's library, has its paragraph
// with a license named; rtscope's own files say that no license is
// granted while the repository has no LICENSE file.
func TestDebCopyright(t *testing.T) {
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		missing(t, "no dpkg-deb here: the package is checked where Debian's tools are")
	}
	deb, err := buildDeb(testOptions(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	x := t.TempDir()
	run(t, "dpkg-deb", "-x", deb, x)
	b, err := os.ReadFile(filepath.Join(x, "usr/share/doc/rtscope/copyright"))
	if err != nil {
		t.Fatal(err)
	}
	paras := strings.Split(strings.TrimSpace(string(b)), "\n\n")
	if !strings.HasPrefix(paras[0], "Format: "+copyrightFormat+"\n") {
		t.Fatalf("copyright header %q", paras[0])
	}
	license := map[string]string{} // Files -> License's first line
	for _, p := range paras[1:] {
		f := fields(p)
		if f["Files"] == "" || f["Copyright"] == "" || f["License"] == "" {
			t.Errorf("paragraph without Files, Copyright or License:\n%s", p)
		}
		license[f["Files"]] = f["License"]
	}
	if license["bpf/*"] != "GPL-2" || license["go/*"] != "BSD-3-clause" {
		t.Errorf("bpf/* %q, go/* %q: want GPL-2 and BSD-3-clause", license["bpf/*"], license["go/*"])
	}
	if _, err := readLicense(root); errors.Is(err, os.ErrNotExist) && license["*"] != "no-license-granted" {
		t.Errorf("rtscope's own files: %q, want no-license-granted (no LICENSE file)", license["*"])
	}
	info, err := buildinfo.ReadFile(hostBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range info.Deps {
		if license[d.Path+"/*"] == "" {
			t.Errorf("no paragraph for %s, compiled in", d.Path)
		}
	}
	if license["github.com/cilium/ebpf/*"] != "Expat" || license["github.com/spf13/cobra/*"] != "Apache-2.0" {
		t.Errorf("cilium/ebpf %q, cobra %q: want Expat and Apache-2.0", license["github.com/cilium/ebpf/*"], license["github.com/spf13/cobra/*"])
	}
}

// fields returns a DEP-5 paragraph's fields, each with its first line.
func fields(p string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(p, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, " ") {
			out[k] = strings.TrimSpace(v)
			if out[k] == "" {
				out[k] = "(continued)"
			}
		}
	}
	return out
}

// A license text is named or refused: a text not known here stops the
// package rather than ship it unnamed; Debian's common licenses are
// referred to, not copied.
func TestLicenseField(t *testing.T) {
	if _, err := licenseField("Use it as you like."); err == nil {
		t.Error("an unknown license text was named")
	}
	apache, err := licenseField("                                 Apache License\n                           Version 2.0, January 2004\n")
	if err != nil || !strings.HasPrefix(apache, "Apache-2.0\n") || !strings.Contains(apache, "/usr/share/common-licenses/Apache-2.0") {
		t.Errorf("Apache: %q, %v", apache, err)
	}
	mit, err := licenseField("Copyright (c) 2020 X\n\nPermission is hereby granted, free of charge, to any person\n")
	if err != nil || mit != "Expat\n Copyright (c) 2020 X\n .\n Permission is hereby granted, free of charge, to any person" {
		t.Errorf("MIT: %q, %v", mit, err)
	}
	if got := copyrightLines("Copyright (c) 2017 A\nCopyright 2019 B\n", "m"); got != "2017 A\n 2019 B" {
		t.Errorf("copyright lines %q", got)
	}
}

// missing fails a test whose tool or setting this machine lacks: make test
// installs and sets them, and a test that did not run is no passing test.
func missing(t *testing.T, why string) {
	t.Helper()
	t.Fatal(why + " (make test installs or sets it)")
}
