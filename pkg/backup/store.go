package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// Store keeps backups by key. The provider picks it (capn-apiserver
// --backup-dir today); object storage is another implementation.
type Store interface {
	// Create returns a writer for key; what it wrote is visible under key
	// only after Close returns nil. Abort drops it instead.
	Create(ctx context.Context, key string) (Pending, error)
	// Open reads key; an absent key is an error wrapping fs.ErrNotExist.
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	// Delete removes key; an absent key is not an error.
	Delete(ctx context.Context, key string) error
}

// Pending is a backup being written.
type Pending interface {
	io.Writer
	Close() error
	Abort()
}

// keyPattern is what a key may be: "<namespace>/<uid>" (Key). Keys become
// paths, so nothing else is allowed in.
var keyPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?/[a-f0-9-]{1,64}$`)

// Key is where a NestedClusterBackup's data is kept: by UID, so that a
// backup deleted and created again under the same name never reads the old
// one's data.
func Key(namespace, uid string) string { return namespace + "/" + uid }

// Dir is a Store in a directory, e.g. a PersistentVolumeClaim mounted into
// capn-apiserver.
type Dir struct{ Root string }

func (d Dir) path(key string) (string, error) {
	if !keyPattern.MatchString(key) {
		return "", fmt.Errorf("backup key %q is not <namespace>/<uid>", key)
	}
	return filepath.Join(d.Root, filepath.FromSlash(key)), nil
}

// Create writes to a temporary file next to the backup and renames it into
// place on Close, after an fsync: a crash leaves no half backup under key.
func (d Dir) Create(_ context.Context, key string) (Pending, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return nil, err
	}
	return &dirPending{f: f, dst: p}, nil
}

type dirPending struct {
	f   *os.File
	dst string
}

func (p *dirPending) Write(b []byte) (int, error) { return p.f.Write(b) }

func (p *dirPending) Close() error {
	err := p.f.Sync()
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(p.f.Name(), p.dst)
	}
	if err != nil {
		_ = os.Remove(p.f.Name())
	}
	return err
}

func (p *dirPending) Abort() {
	_ = p.f.Close()
	_ = os.Remove(p.f.Name())
}

func (d Dir) Open(_ context.Context, key string) (io.ReadCloser, error) {
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

func (d Dir) Delete(_ context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
