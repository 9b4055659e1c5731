// Command images packs static binaries into single-layer container images
// and writes them as one docker-archive tarball, which `ctr images import`
// loads into a node's containerd. No registry is involved: nothing here can
// reach one.
//
//	images --out images.tar NAME=BINARY [NAME=BINARY ...]
//	images --out images.tar NAME=DIR [...]
//
// NAME is a full image reference (e.g. registry.k8s.io/kube-apiserver:v1.37.2);
// the binary is installed as /usr/local/bin/<basename> and is the entrypoint.
//
// When the right-hand side is a directory, DIR/rootfs is the image's whole
// file system (directories, regular files and symlinks, with their
// permission bits; owner root, time zero) and DIR/config.json its runtime
// config: {"Entrypoint": [...], "Cmd": [...], "Env": [...], "WorkingDir":
// "...", "User": "..."}, the OCI image config's fields of those names. That
// is for images whose users rely on more than one program or on files beside
// it (e.g. the upstream e2e suite's agnhost and busybox, see
// hack/build-conformance-images.sh).
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
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
		var img v1.Image
		if fi, serr := os.Stat(bin); serr == nil && fi.IsDir() {
			img, err = imageForDir(bin)
		} else {
			img, err = imageFor(bin)
		}
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
	return imageOf(layerTar, v1.Config{
		Entrypoint: []string{target},
		Env:        []string{"PATH=/usr/local/bin"},
	})
}

// imageOf makes a linux/amd64 image of one uncompressed layer tarball and
// the given runtime config.
func imageOf(layerTar []byte, config v1.Config) (v1.Image, error) {
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
	cfg.Config = config
	return mutate.ConfigFile(img, cfg)
}

// dirConfig is the part of an image's runtime config DIR/config.json sets.
type dirConfig struct {
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
	User       string
}

// imageForDir builds a reproducible image of DIR/rootfs with the runtime
// config in DIR/config.json (see the package comment).
func imageForDir(dir string) (v1.Image, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	var c dirConfig
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "config.json"), err)
	}
	if len(c.Entrypoint) == 0 && len(c.Cmd) == 0 {
		return nil, fmt.Errorf("%s: neither Entrypoint nor Cmd is set", filepath.Join(dir, "config.json"))
	}
	layerTar, err := tarOfDir(filepath.Join(dir, "rootfs"))
	if err != nil {
		return nil, err
	}
	return imageOf(layerTar, v1.Config{
		Entrypoint: c.Entrypoint,
		Cmd:        c.Cmd,
		Env:        c.Env,
		WorkingDir: c.WorkingDir,
		User:       c.User,
	})
}

// tarOfDir writes the tree under root as a layer: directories, regular files
// and symlinks in lexical order, each with its permission, setuid, setgid
// and sticky bits, owned by root, at time zero, so the same tree always
// gives the same digest. Anything else (devices, sockets) is an error.
func tarOfDir(root string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: rel, ModTime: epoch, Mode: tarMode(fi.Mode())}
		switch {
		case fi.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, rel+"/"
		case fi.Mode()&fs.ModeSymlink != 0:
			hdr.Typeflag = tar.TypeSymlink
			if hdr.Linkname, err = os.Readlink(path); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			hdr.Typeflag, hdr.Size = tar.TypeReg, fi.Size()
		default:
			return fmt.Errorf("%s: unsupported file type %s", path, fi.Mode().Type())
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarMode maps a file mode to a tar header's: permission bits plus setuid,
// setgid and sticky at their Unix positions.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
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
