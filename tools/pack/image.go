package main

import (
	"archive/tar"
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ImageName is the image's name, as contrib/kubernetes/daemonset.yaml
// refers to it (kubelet reads "rtscope:latest" as this); ImageTag its tag.
const (
	ImageName = "docker.io/library/rtscope:latest"
	ImageTag  = "latest"
)

// rootEntry is one entry of the image's only layer.
type rootEntry struct {
	name string
	mode int64 // permission bits, plus tar's type below
	dir  bool
	src  string // a file's content ("": a directory)
}

// imageRoot is the image's file system, FROM scratch: the static binary
// and the directories the agent writes or mounts over (the DaemonSet's
// read-only root gets volumes there). No shell, no libc, no CA
// certificates: rtscope makes no TLS connection.
func imageRoot(bin string) []rootEntry {
	return []rootEntry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/rtscope/", mode: 0o755, dir: true},
		{name: "run/", mode: 0o755, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/bin/", mode: 0o755, dir: true},
		{name: "usr/bin/rtscope", mode: 0o755, src: bin},
		{name: "var/", mode: 0o755, dir: true},
		{name: "var/lib/", mode: 0o755, dir: true},
		{name: "var/lib/rtscope/", mode: 0o700, dir: true},
	}
}

// layerTar writes the entries as an uncompressed tar, owned by root, at
// time 0: the same binary gives the same layer digest.
func layerTar(entries []rootEntry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: time.Unix(0, 0), Format: tar.FormatPAX, Typeflag: tar.TypeDir}
		var body []byte
		if !e.dir {
			b, err := os.ReadFile(e.src)
			if err != nil {
				return nil, err
			}
			body, h.Typeflag, h.Size = b, tar.TypeReg, int64(len(b))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(body); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), tw.Close()
}

// image builds the image: one layer onto the empty image, its config
// running the agent (Entrypoint rtscope, Cmd serve: an idle agent until
// the DaemonSet's args or ctl give it targets).
func image(o options) (v1.Image, error) {
	tarBytes, err := layerTar(imageRoot(o.bin))
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer,
		History: v1.History{CreatedBy: "rtscope tools/pack: the static binary", Created: v1.Time{Time: time.Unix(0, 0)}}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = "linux", o.arch, v1.Time{Time: time.Unix(0, 0)}
	cfg.Config.Entrypoint = []string{"/usr/bin/rtscope"}
	cfg.Config.Cmd = []string{"serve"}
	cfg.Config.Env = []string{"PATH=/usr/bin"} // kubectl exec ... rtscope ctl list
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":   "rtscope",
		"org.opencontainers.image.version": o.version,
		"org.opencontainers.image.source":  "https://github.com/rtscope/rtscope",
	}
	return mutate.ConfigFile(img, cfg)
}

// buildImage writes the image as an OCI archive (an OCI image layout in a
// tar) at o.out, named ImageName (io.containerd.image.name, read by ctr
// import and docker load) and ImageTag (org.opencontainers.image.ref.name,
// skopeo's oci-archive:FILE:latest).
func buildImage(o options) error {
	img, err := image(o)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "rtscope-oci-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }() // archived below
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          ImageName,
		"org.opencontainers.image.ref.name": ImageTag,
	}), layout.WithPlatform(v1.Platform{OS: "linux", Architecture: o.arch})); err != nil {
		return err
	}
	return tarDir(dir, o.out)
}

// tarDir archives the files under dir into the tar file out, in walk
// (lexical) order, at time 0.
func tarDir(dir, out string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if d.IsDir() {
			h.Name, h.Mode, h.Typeflag = h.Name+"/", 0o755, tar.TypeDir
			return tw.WriteHeader(h)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h.Size = int64(len(b))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}
