package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"go.yaml.in/yaml/v3"
)

// untar unpacks the tar stream r into dir (regular files and directories,
// the only entries the archive and the layer hold).
func untar(t *testing.T, r io.Reader, dir string) {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, os.FileMode(h.Mode)&os.ModePerm); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, os.FileMode(h.Mode)&os.ModePerm); err != nil {
			t.Fatal(err)
		}
	}
}

// The image archive is an OCI layout in a tar, named as the DaemonSet
// refers to it, with one manifest of this machine's architecture whose
// config runs the agent, and one layer holding the very binary; its
// unpacked root runs rtscope version (chrooted: FROM scratch, nothing but
// the static binary), and skopeo reads the archive where it is installed.
func TestImage(t *testing.T) {
	o := testOptions(t, filepath.Join(t.TempDir(), "rtscope-oci.tar"))
	if err := buildImage(o); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(o.out)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }() // read only
	dir := t.TempDir()
	untar(t, f, dir)
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("not an OCI layout: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 {
		t.Fatalf("index: %v, %+v", err, im)
	}
	d := im.Manifests[0]
	if d.Annotations["io.containerd.image.name"] != ImageName || d.Annotations["org.opencontainers.image.ref.name"] != ImageTag ||
		d.MediaType != types.OCIManifestSchema1 || d.Platform == nil || d.Platform.Architecture != runtime.GOARCH {
		t.Errorf("index entry: %+v (platform %+v)", d, d.Platform)
	}
	img, err := idx.Image(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.Config.Entrypoint, " ") != "/usr/bin/rtscope" || strings.Join(cfg.Config.Cmd, " ") != "serve" ||
		cfg.OS != "linux" || cfg.Architecture != runtime.GOARCH || cfg.Config.Labels["org.opencontainers.image.version"] != o.version {
		t.Errorf("config: entrypoint %v cmd %v, %s/%s, labels %v", cfg.Config.Entrypoint, cfg.Config.Cmd, cfg.OS, cfg.Architecture, cfg.Config.Labels)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	rootfs := t.TempDir()
	untar(t, rc, rootfs)
	_ = rc.Close() // read whole
	checkRoot(t, rootfs, o.bin)
	if _, err := exec.LookPath("skopeo"); err == nil {
		out := run(t, "skopeo", "inspect", "--raw", "oci-archive:"+o.out+":"+ImageTag)
		if !strings.Contains(out, string(types.OCIManifestSchema1)) {
			t.Errorf("skopeo inspect: %s", out)
		}
	}
}

// checkRoot checks the image's unpacked root: the binary the same bytes
// as bin and executable, and runnable alone in that root.
func checkRoot(t *testing.T, rootfs, bin string) {
	got, err := os.ReadFile(filepath.Join(rootfs, "usr/bin/rtscope"))
	want, _ := os.ReadFile(bin)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the image's /usr/bin/rtscope is not the binary (%v)", err)
	}
	if st, _ := os.Stat(filepath.Join(rootfs, "usr/bin/rtscope")); st.Mode()&0o111 == 0 {
		t.Errorf("/usr/bin/rtscope mode %v: not executable", st.Mode())
	}
	if os.Geteuid() != 0 {
		t.Log("not root: the unpacked root is not chrooted into")
		return
	}
	out := run(t, "chroot", rootfs, "/usr/bin/rtscope", "version")
	if !strings.HasPrefix(out, "rtscope ") {
		t.Errorf("rtscope version in the image's root: %q", out)
	}
}

// The DaemonSet runs the image make image builds, taken from the node
// (the image is loaded there, not pulled: IfNotPresent, since a :latest
// tag is pulled always otherwise).
func TestDaemonSetImage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "contrib/kubernetes/daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var doc struct {
			Kind string `yaml:"kind"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Image      string `yaml:"image"`
							PullPolicy string `yaml:"imagePullPolicy"`
						} `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		if err := dec.Decode(&doc); err != nil {
			t.Fatal("no DaemonSet in daemonset.yaml")
		}
		if doc.Kind != "DaemonSet" {
			continue
		}
		c := doc.Spec.Template.Spec.Containers
		if len(c) != 1 || "docker.io/library/"+c[0].Image != ImageName || c[0].PullPolicy != "IfNotPresent" {
			t.Fatalf("the DaemonSet runs %+v; want image %s, imagePullPolicy IfNotPresent", c, strings.TrimPrefix(ImageName, "docker.io/library/"))
		}
		return
	}
}
