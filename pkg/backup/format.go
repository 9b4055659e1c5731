// Package backup takes and restores a NestedCluster's etcd data: every key
// under the cluster's prefix, read at one revision, as a stream in capn's
// own format, kept in a Store.
//
// A logical backup (keys and values, not etcd's database file) is one
// format for every kind of tenant: a managed etcd and a pooled tenant,
// which may read only its own prefix and so cannot take
// Maintenance.Snapshot of the whole pool. It restores into either, under
// any prefix, through the etcd API: no etcdutl in the tenant's pods, and
// no file to carry into their volumes.
package backup

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
)

// magic opens every backup; the version is in it.
const magic = "capn.dev/etcd-backup/v1\n"

// Bounds a reader applies: etcd refuses a request over 1.5 MiB by default,
// and the kube-apiserver writes keys far shorter than MaxKeyBytes.
const (
	MaxKeyBytes   = 32 << 10
	MaxValueBytes = 2 << 20
)

// Summary describes one backup.
type Summary struct {
	// Revision is the etcd revision every key was read at.
	Revision int64
	// Keys is how many keys the backup holds.
	Keys int64
	// Bytes is the size of the backup as stored.
	Bytes int64
}

// writer writes the format: magic, then per key uvarint(len) key
// uvarint(len) value, with keys relative to the cluster's prefix; then a
// zero-length key, varint(revision), uvarint(keys) and the SHA-256 of all
// that came before.
type writer struct {
	w    *bufio.Writer
	sum  hash.Hash
	n    int64
	keys int64
	err  error
}

func newWriter(w io.Writer) *writer {
	x := &writer{sum: sha256.New()}
	x.w = bufio.NewWriter(io.MultiWriter(w, x.sum, (*counter)(&x.n)))
	_, x.err = x.w.WriteString(magic)
	return x
}

type counter int64

func (c *counter) Write(p []byte) (int, error) { *c += counter(len(p)); return len(p), nil }

func (x *writer) uvarint(v uint64) {
	if x.err == nil {
		_, x.err = x.w.Write(binary.AppendUvarint(nil, v))
	}
}

func (x *writer) bytes(b []byte) {
	x.uvarint(uint64(len(b)))
	if x.err == nil {
		_, x.err = x.w.Write(b)
	}
}

func (x *writer) put(key, value []byte) error {
	if len(key) == 0 {
		return errors.New("a key equal to the prefix cannot be backed up")
	}
	x.bytes(key)
	x.bytes(value)
	x.keys++
	return x.err
}

func (x *writer) close(revision int64) (Summary, error) {
	x.uvarint(0)
	if x.err == nil {
		_, x.err = x.w.Write(binary.AppendVarint(nil, revision))
	}
	x.uvarint(uint64(x.keys))
	if x.err == nil {
		x.err = x.w.Flush()
	}
	if x.err != nil {
		return Summary{}, x.err
	}
	// The checksum is not part of what it sums.
	if _, err := x.w.Write(x.sum.Sum(nil)); err != nil {
		return Summary{}, err
	}
	if err := x.w.Flush(); err != nil {
		return Summary{}, err
	}
	return Summary{Revision: revision, Keys: x.keys, Bytes: x.n}, nil
}

// ErrCorrupt is a backup that is not one, or not whole.
var ErrCorrupt = errors.New("backup is corrupt or truncated")

// Read streams a backup's keys (relative to its prefix) to fn, and checks
// its trailer and checksum at the end: fn has seen every key of a backup
// only when Read returns nil. Verify first to restore nothing from a bad
// one.
func Read(r io.Reader, fn func(key, value []byte) error) (Summary, error) {
	br := &summingReader{r: bufio.NewReader(r), sum: sha256.New()}
	head := make([]byte, len(magic))
	if _, err := io.ReadFull(br, head); err != nil || !bytes.Equal(head, []byte(magic)) {
		return Summary{}, fmt.Errorf("%w: not a capn etcd backup", ErrCorrupt)
	}
	field := func(limit int) ([]byte, error) {
		l, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		if l > uint64(limit) {
			return nil, fmt.Errorf("%w: a field of %d bytes is over the %d allowed", ErrCorrupt, l, limit)
		}
		b := make([]byte, l)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return b, nil
	}
	var keys int64
	for {
		key, err := field(MaxKeyBytes)
		if err != nil {
			return Summary{}, err
		}
		if len(key) == 0 {
			break
		}
		value, err := field(MaxValueBytes)
		if err != nil {
			return Summary{}, err
		}
		if err := fn(key, value); err != nil {
			return Summary{}, err
		}
		keys++
	}
	rev, err1 := binary.ReadVarint(br)
	count, err2 := binary.ReadUvarint(br)
	if err := errors.Join(err1, err2); err != nil {
		return Summary{}, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	want := br.sum.Sum(nil)
	got := make([]byte, sha256.Size)
	if _, err := io.ReadFull(br.r, got); err != nil {
		return Summary{}, fmt.Errorf("%w: no checksum: %w", ErrCorrupt, err)
	}
	if count != uint64(keys) || !bytes.Equal(got, want) {
		return Summary{}, fmt.Errorf("%w: checksum or key count does not match", ErrCorrupt)
	}
	if _, err := br.r.ReadByte(); err != io.EOF {
		return Summary{}, fmt.Errorf("%w: data after the checksum", ErrCorrupt)
	}
	return Summary{Revision: rev, Keys: keys, Bytes: br.n + sha256.Size}, nil
}

// summingReader sums exactly the bytes the parser consumes (a bufio
// reader reads ahead, into the checksum).
type summingReader struct {
	r   *bufio.Reader
	sum hash.Hash
	n   int64
}

func (s *summingReader) ReadByte() (byte, error) {
	b, err := s.r.ReadByte()
	if err == nil {
		s.sum.Write([]byte{b})
		s.n++
	}
	return b, err
}

func (s *summingReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.sum.Write(p[:n])
	s.n += int64(n)
	return n, err
}

// Verify reads a whole backup and checks it, restoring nothing.
func Verify(r io.Reader) (Summary, error) {
	return Read(r, func(_, _ []byte) error { return nil })
}
