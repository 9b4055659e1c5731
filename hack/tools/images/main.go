// Command images packs static binaries into single-layer container images
// and writes them as one docker-archive tarball, which `ctr images import`
// loads into a node's containerd. No registry is involved: nothing here can
// reach one.
//
//	images --out images.tar NAME=BINARY [NAME=BINARY ...]
//
// NAME is a full image reference (e.g. registry.k8s.io/kube-apiserver:v1.37.2);
// the binary is installed as /usr/local/bin/<basename> and is the entrypoint.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	out := flag.String("out", "", "tarball to write")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: images --out FILE NAME=BINARY...")
		os.Exit(2)
	}
	if err := run(*out, flag.Args()); err != nil {
		fmt.Fprintf(os.Stderr, "images: %v\n", err)
		os.Exit(1)
	}
}

func run(out string, specs []string) error {
	images := map[name.Reference]v1.Image{}
	for _, spec := range specs {
		ref, bin, ok := strings.Cut(spec, "=")
		if !ok {
			return fmt.Errorf("%q is not NAME=BINARY", spec)
		}
		tag, err := name.NewTag(ref, name.StrictValidation)
		if err != nil {
			return fmt.Errorf("image name %q: %w", ref, err)
		}
		start := time.Now()
		img, err := imageFor(bin)
		if err != nil {
			return fmt.Errorf("%s: %w", ref, err)
		}
		digest, err := img.Digest()
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "images: %s %s (%s)\n", ref, digest, time.Since(start).Round(time.Millisecond))
		images[tag] = img
	}
	tmp := out + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmp, images); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// imageFor builds a reproducible image: fixed timestamps and ownership, so
// the same binary always gives the same digest and callers can skip a
// re-import when nothing changed.
func imageFor(bin string) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	target := "/usr/local/bin/" + filepath.Base(bin)
	layerTar, err := tarOf(target, data)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Entrypoint = []string{target}
	cfg.Config.Env = []string{"PATH=/usr/local/bin"}
	return mutate.ConfigFile(img, cfg)
}

// tarOf writes the binary plus the directories a Go server expects (/tmp
// for os.TempDir, /var/lib for data volumes to mount over).
func tarOf(target string, data []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, d := range []struct {
		name string
		mode int64
	}{{"tmp/", 0o1777}, {"usr/", 0o755}, {"usr/local/", 0o755}, {"usr/local/bin/", 0o755}, {"var/", 0o755}, {"var/lib/", 0o755}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name, Mode: d.mode, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(target, "/"), Mode: 0o755, Size: int64(len(data)), ModTime: epoch}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
