package keystore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// bucketRuns holds the saga runs (RunKeeper): id -> encoded Run. It is
// made by the first PutRun, so files without runs keep the layout every
// build reads.
var bucketRuns = []byte("runs")

var _ RunKeeper = (*Bolt)(nil)

// runCodecMark starts every encoded run: the layout, then the SHA-256 of
// the JSON that follows it, so a damaged run is ErrCorrupt, never read as
// another decision.
var runCodecMark = []byte("idem-run-v1\x00")

// encodeRun is mark, SHA-256 of the JSON, JSON.
func encodeRun(r *Run) ([]byte, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("keystore: encode run %q: %w", r.ID, err)
	}
	sum := sha256.Sum256(body)
	out := make([]byte, 0, len(runCodecMark)+len(sum)+len(body))
	out = append(out, runCodecMark...)
	out = append(out, sum[:]...)
	return append(out, body...), nil
}

// decodeRun checks and decodes what encodeRun wrote for id.
func decodeRun(id string, data []byte) (*Run, error) {
	head := len(runCodecMark) + sha256.Size
	if len(data) < head || !bytes.Equal(data[:len(runCodecMark)], runCodecMark) {
		return nil, fmt.Errorf("%w: run %q: unknown layout", ErrCorrupt, id)
	}
	body := data[head:]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], data[len(runCodecMark):head]) {
		return nil, fmt.Errorf("%w: run %q fails its checksum", ErrCorrupt, id)
	}
	var r Run
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%w: run %q: %v", ErrCorrupt, id, err)
	}
	if r.ID != id {
		return nil, fmt.Errorf("%w: run stored under %q names itself %q", ErrCorrupt, id, r.ID)
	}
	return &r, nil
}

// PutRun implements RunKeeper: the version check reads the stored run in
// the write transaction itself, and the write is durable on return.
func (b *Bolt) PutRun(ctx context.Context, r *Run) error {
	if err := CheckRun(ctx, r); err != nil {
		return err
	}
	release, err := b.enter()
	if err != nil {
		return err
	}
	defer release()
	data, err := encodeRun(r)
	if err != nil {
		return err
	}
	id := []byte(r.ID)
	return b.writes.submit(ctx, func(tx *bolt.Tx) (bool, error) {
		runs, err := tx.CreateBucketIfNotExists(bucketRuns)
		if err != nil {
			return true, fmt.Errorf("keystore: put run %q: %w", r.ID, err)
		}
		var stored uint64
		if old := runs.Get(id); old != nil {
			prev, err := decodeRun(r.ID, old)
			if err != nil {
				return false, err
			}
			stored = prev.Version
		}
		if r.Version != stored+1 {
			return false, runVersionError(r.ID, stored, r.Version)
		}
		if err := runs.Put(id, data); err != nil {
			return true, fmt.Errorf("keystore: put run %q: %w", r.ID, err)
		}
		return true, nil
	})
}

// GetRun implements RunKeeper.
func (b *Bolt) GetRun(ctx context.Context, id string) (*Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	release, err := b.enter()
	if err != nil {
		return nil, err
	}
	defer release()
	var r *Run
	err = b.view(func(tx *bolt.Tx) error {
		var data []byte
		if runs := tx.Bucket(bucketRuns); runs != nil {
			data = runs.Get([]byte(id))
		}
		if data == nil {
			return fmt.Errorf("%w: run %q", ErrNotFound, id)
		}
		var err error
		r, err = decodeRun(id, data)
		return err
	})
	return r, err
}

// ListRuns implements RunKeeper.
func (b *Bolt) ListRuns(ctx context.Context) ([]*Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	release, err := b.enter()
	if err != nil {
		return nil, err
	}
	defer release()
	var out []*Run
	var damaged CorruptRecords
	err = b.view(func(tx *bolt.Tx) error {
		out, damaged = nil, CorruptRecords{}
		runs := tx.Bucket(bucketRuns)
		if runs == nil {
			return nil
		}
		return runs.ForEach(func(k, v []byte) error {
			r, err := decodeRun(string(k), v)
			if err != nil {
				damaged.Add(string(k), err)
				return nil
			}
			out = append(out, r)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	sortRunsOldestFirst(out)
	return out, damaged.Err()
}
