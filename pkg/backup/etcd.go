package backup

import (
	"context"
	"fmt"
	"io"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// pageSize bounds one range read; each page is read at the first page's
// revision, so the backup is one consistent point in time.
const pageSize = 500

// Snapshot writes every key under prefix, read at one revision, to w,
// with prefix cut off each key. A tenant apiserver compacts its etcd every
// few minutes; a backup that outlasts the revision it started at fails
// with etcd's ErrCompacted, and is taken again by the caller.
func Snapshot(ctx context.Context, kv clientv3.KV, prefix string, w io.Writer) (Summary, error) {
	out := newWriter(w)
	end := clientv3.GetPrefixRangeEnd(prefix)
	key, rev := prefix, int64(0)
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(pageSize)}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := kv.Get(ctx, key, opts...)
		if err != nil {
			return Summary{}, fmt.Errorf("reading %s at revision %d: %w", prefix, rev, err)
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, e := range resp.Kvs {
			if err := out.put(e.Key[len(prefix):], e.Value); err != nil {
				return Summary{}, fmt.Errorf("writing the backup: %w", err)
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	s, err := out.close(rev)
	if err != nil {
		return Summary{}, fmt.Errorf("writing the backup: %w", err)
	}
	return s, nil
}

// Batches a restore writes in one transaction: etcd allows 128 operations
// and a 1.5 MiB request by default.
const (
	batchOps   = 100
	batchBytes = 1 << 20
)

// Restore puts every key of the backup r under prefix. Puts overwrite, so
// a restore that failed halfway is finished by running it again. Verify
// the backup first: Restore writes as it reads, and a bad checksum is
// known only at the end.
func Restore(ctx context.Context, kv clientv3.KV, prefix string, r io.Reader) (Summary, error) {
	var ops []clientv3.Op
	size := 0
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		if _, err := kv.Txn(ctx).Then(ops...).Commit(); err != nil {
			return fmt.Errorf("writing %d keys under %s: %w", len(ops), prefix, err)
		}
		ops, size = ops[:0], 0
		return nil
	}
	s, err := Read(r, func(key, value []byte) error {
		if len(ops) == batchOps || (len(ops) > 0 && size+len(key)+len(value) > batchBytes) {
			if err := flush(); err != nil {
				return err
			}
		}
		ops = append(ops, clientv3.OpPut(prefix+string(key), string(value)))
		size += len(prefix) + len(key) + len(value)
		return nil
	})
	if err != nil {
		return Summary{}, err
	}
	if err := flush(); err != nil {
		return Summary{}, err
	}
	return s, nil
}
