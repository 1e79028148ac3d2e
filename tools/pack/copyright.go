package main

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// copyrightFormat is the machine-readable format of Debian's copyright
// files (DEP-5).
const copyrightFormat = "https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"

// commonLicenses are the licenses Debian ships the text of in
// /usr/share/common-licenses: a copyright file refers to them rather than
// copying them (lintian's copyright-not-using-common-license-for-*).
var commonLicenses = map[string]string{"Apache-2.0": "Apache-2.0", "GPL-2": "GPL-2", "MPL-2.0": "MPL-2.0"}

// licenseFiles are the names a license file has in a module or the
// repository, in the order they are looked for.
var licenseFiles = []string{"LICENSE", "LICENSE.txt", "LICENSE.md", "COPYING", "LICENCE"}

// writeCopyright writes the package's copyright file (DEP-5): rtscope's
// own code under the repository's LICENSE (none chosen yet: said so), the
// BPF programs under bpf/ GPL-2.0 (their SPDX lines; the kernel requires
// a GPL-compatible license of them), and each Go module compiled into the
// binary, read from its build information, with its license file from
// the module cache: a static Go binary carries them all.
func writeCopyright(path string, o options) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Format: %s\nUpstream-Name: rtscope\nSource: https://github.com/rtscope/rtscope\n\n", copyrightFormat)
	own, err := ownLicense(o.root)
	if err != nil {
		return err
	}
	fmt.Fprintf(&b, "Files: *\nCopyright: %d rtscope developers\nLicense: %s\n\n", o.mtime.Year(), own)
	fmt.Fprintf(&b, "Files: bpf/*\nCopyright: %d rtscope developers\nLicense: GPL-2\n%s\n\n", o.mtime.Year(),
		commonText("GPL-2", "version 2 of the GNU General Public License (SPDX GPL-2.0)"))
	mods, err := modules(o.bin)
	if err != nil {
		return err
	}
	for _, m := range mods {
		p, err := modulePara(m)
		if err != nil {
			return err
		}
		b.WriteString(p)
	}
	return os.WriteFile(path, []byte(strings.TrimRight(b.String(), "\n")+"\n"), 0o644)
}

// ownLicense is the License field of rtscope's own files: the short name
// and text of the repository's license file, or, while it has none, that
// no license is granted yet.
func ownLicense(root string) (string, error) {
	text, err := readLicense(root)
	if errors.Is(err, os.ErrNotExist) {
		return "no-license-granted\n" + indent("The repository states no license for rtscope's own code yet (it has no\n"+
			"LICENSE file): its authors reserve all rights. The BPF programs under\n"+
			"bpf/ are GPL-2.0, below."), nil
	}
	if err != nil {
		return "", err
	}
	return licenseField(text)
}

// module is a Go module compiled into the binary ("std": Go's own
// library).
type module struct{ path, version, dir string }

// modules returns the Go modules compiled into bin, Go's standard library
// first, each with its directory (the module cache, GOROOT).
func modules(bin string) ([]module, error) {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", bin, err)
	}
	goroot, err := goEnv("GOROOT")
	if err != nil {
		return nil, err
	}
	cache, err := goEnv("GOMODCACHE")
	if err != nil {
		return nil, err
	}
	out := []module{{path: "std", version: info.GoVersion, dir: goroot}}
	for _, d := range info.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		out = append(out, module{path: d.Path, version: d.Version,
			dir: filepath.Join(cache, escapePath(d.Path)+"@"+escapePath(d.Version))})
	}
	return out, nil
}

// goEnv returns go env NAME.
func goEnv(name string) (string, error) {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return "", fmt.Errorf("go env %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// escapePath is a module path or version as the module cache spells it:
// each upper-case letter as '!' and its lower case.
func escapePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// modulePara is module m's Files paragraph: its license file's copyright
// lines and license.
func modulePara(m module) (string, error) {
	text, err := readLicense(m.dir)
	if err != nil {
		return "", fmt.Errorf("the license of %s %s (compiled in): %w", m.path, m.version, err)
	}
	lic, err := licenseField(text)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", m.path, m.version, err)
	}
	files, comment := m.path+"/*", "Go module "+m.path+" "+m.version+", compiled into /usr/bin/rtscope."
	if m.path == "std" {
		files, comment = "go/*", "Go's runtime and standard library ("+m.version+"), compiled into /usr/bin/rtscope."
	}
	if notice, err := os.ReadFile(filepath.Join(m.dir, "NOTICE")); err == nil {
		comment += "\nIts NOTICE file:\n" + strings.TrimSpace(string(notice))
	}
	return fmt.Sprintf("Files: %s\nCopyright: %s\nComment:\n%s\nLicense: %s\n\n", files, copyrightLines(text, m.path),
		indent(comment), lic), nil
}

// readLicense returns the text of the first license file in dir.
func readLicense(dir string) (string, error) {
	for _, name := range licenseFiles {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil {
			return string(b), nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("no license file (%s) in %s: %w", strings.Join(licenseFiles, ", "), dir, os.ErrNotExist)
}

// copyrightRE matches a license file's copyright notices.
var copyrightRE = regexp.MustCompile(`(?m)^\s*Copyright\s+(?:\([cC]\)\s*)?(\d.*)$`)

// copyrightLines are the copyright notices of a license text, one a line,
// or its module's authors when it names none (Apache's text does not).
func copyrightLines(text, path string) string {
	var lines []string
	for _, m := range copyrightRE.FindAllStringSubmatch(text, -1) {
		if l := strings.TrimSpace(m[1]); !strings.HasPrefix(l, "[yyyy]") && !strings.HasPrefix(l, "{yyyy}") {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		if path == "std" {
			return "The Go Authors"
		}
		return "the authors of " + path
	}
	return strings.Join(lines, "\n ")
}

// licenseField names a license text's license (its SPDX short name, as
// Debian spells it) and gives its text: a reference to
// /usr/share/common-licenses for those Debian ships, the text itself
// otherwise. A text it cannot name is an error: the package must say it.
func licenseField(text string) (string, error) {
	has := func(s ...string) bool {
		for _, x := range s {
			if !strings.Contains(text, x) {
				return false
			}
		}
		return true
	}
	apache := has("Apache License", "Version 2.0")
	var name string
	switch {
	case has("Permission is hereby granted, free of charge") && apache:
		name = "Expat and Apache-2.0" // go-yaml: ported files MIT, the rest Apache
	case has("Permission is hereby granted, free of charge"):
		name = "Expat"
	case apache:
		return "Apache-2.0\n" + commonText("Apache-2.0", "the Apache License, version 2.0"), nil
	case has("Mozilla Public License", "2.0"):
		return "MPL-2.0\n" + commonText("MPL-2.0", "the Mozilla Public License, version 2.0"), nil
	case has("Redistribution and use in source and binary forms", "Neither the name"):
		name = "BSD-3-clause"
	case has("Redistribution and use in source and binary forms"):
		name = "BSD-2-clause"
	case has("Permission to use, copy, modify, and/or distribute"):
		name = "ISC"
	default:
		return "", errors.New("a license file whose license is not known here: name it in tools/pack/copyright.go")
	}
	return name + "\n" + indent(strings.TrimSpace(text)), nil
}

// commonText is the license text that refers to Debian's copy of it.
func commonText(file, what string) string {
	return indent(fmt.Sprintf("On Debian systems, the complete text of %s\n"+
		"can be found in /usr/share/common-licenses/%s.", what, commonLicenses[file]))
}

// indent makes text a DEP-5 continuation: each line after one space, an
// empty line as " .".
func indent(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			lines[i] = " ."
		} else {
			lines[i] = " " + l
		}
	}
	return strings.Join(lines, "\n")
}
