package main

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// A directory image keeps the tree (symlinks, modes) and the config, and
// the same tree always gives the same digest.
func TestImageForDir(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "rootfs")
	for _, d := range []string{"bin", "tmp", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "tmp"), 0o1777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "busybox"), []byte("#!binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("busybox", filepath.Join(root, "bin", "sh")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc", "passwd"), []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"Cmd":["sh"],"Env":["PATH=/bin"]}`), 0o644); err != nil {
		t.Fatal(err)
	}

	img, err := imageForDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Config.Cmd, []string{"sh"}) || cfg.Config.Entrypoint != nil || !reflect.DeepEqual(cfg.Config.Env, []string{"PATH=/bin"}) {
		t.Errorf("config = %+v", cfg.Config)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("platform = %s/%s", cfg.OS, cfg.Architecture)
	}

	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers = %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got := map[string]tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name] = *h
	}
	for name, want := range map[string]struct {
		typ  byte
		mode int64
		link string
	}{
		"bin/":        {tar.TypeDir, 0o755, ""},
		"tmp/":        {tar.TypeDir, 0o1777, ""},
		"bin/busybox": {tar.TypeReg, 0o755, ""},
		"bin/sh":      {tar.TypeSymlink, 0o777, "busybox"},
		"etc/passwd":  {tar.TypeReg, 0o644, ""},
	} {
		h, ok := got[name]
		if !ok {
			t.Errorf("%s missing from the layer (have %v)", name, got)
			continue
		}
		if h.Typeflag != want.typ || h.Mode != want.mode || h.Linkname != want.link || h.Uid != 0 || h.ModTime.Unix() != 0 {
			t.Errorf("%s: type %c mode %o link %q uid %d mtime %v", name, h.Typeflag, h.Mode, h.Linkname, h.Uid, h.ModTime)
		}
	}

	again, err := imageForDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("digest changed between two builds of the same tree: %s, %s", d1, d2)
	}
}

func TestImageForDirRejectsUnknownConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []string{`{"Cmd":["sh"],"Volumes":{}}`, `{}`} {
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := imageForDir(dir); err == nil {
			t.Errorf("config %s accepted", cfg)
		}
	}
}

// A single-binary image is unchanged by the directory support.
func TestImageForBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(bin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	img, err := imageFor(bin)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.Config.Entrypoint, []string{"/usr/local/bin/pause"}) || !bytes.Equal([]byte(cfg.Config.Env[0]), []byte("PATH=/usr/local/bin")) {
		t.Errorf("config = %+v", cfg.Config)
	}
}
