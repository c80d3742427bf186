package keystore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Layout of a keystore file.
var (
	bucketMeta    = []byte("meta")    // format marker and version
	bucketRecords = []byte("records") // key -> encoded Record
	bucketNames   = []byte("names")   // name -> key
	// bucketLog (bolt_log.go): time-ordered id + key -> encoded Record,
	// the records not yet folded into bucketRecords; since version 2.

	metaFormatKey  = []byte("format")
	metaVersionKey = []byte("version")
	formatMarker   = []byte("idem-keystore")
)

// formatVersion is the layout version written into new files. A file with a
// higher version comes from a newer build and is refused. Version 1 had no
// log bucket: OpenBolt adds it and marks the file version 2 (an older
// build then refuses the file, since it would not see the log).
const formatVersion byte = 2

// OpenBolt opens the keystore file at path, creating it if it does not
// exist (unless opts.NoCreate or opts.ReadOnly). opts may be nil.
//
// A new file is built under a temporary name and linked into place only
// once its layout is committed, so a file found at path is either a
// complete keystore or something else: an empty file, a bbolt file of
// another program, or a damaged file all fail with an error wrapping
// ErrCorrupt that names path. If another process has the file open,
// OpenBolt waits up to opts.Timeout and then fails with an error wrapping
// ErrLocked.
//
// Before bbolt reads the file, OpenBolt checks every page bbolt will
// trust (checkPages): opening, listing and reading any bytes end, in time
// and memory bounded by the file's size, with a result or ErrCorrupt. A
// file with a damaged meta page fails with ErrMetaDamaged (see
// BoltOptions.AcceptOlderMeta). What it cannot see: a damaged meta page
// that still passes its checksum, and the loss of both a commit and the
// damage (a whole older copy of the file put in its place). While open,
// a file deleted or replaced at path fails the writes with
// ErrFileReplaced.
//
// A client takes the file best through idem.WithBoltStore, which calls
// OpenBolt and owns what it opens; call OpenBolt directly for the
// *Bolt itself (a tool, a test, idem.WithStore).
func OpenBolt(path string, opts *BoltOptions) (*Bolt, error) {
	o := opts.withDefaults()
	if path == "" {
		return nil, errors.New("keystore: open bolt: empty path")
	}
	if o.ReadOnly || o.NoCreate {
		if err := mustExist(path); err != nil {
			return nil, err
		}
	} else if err := ensureFile(path, o); err != nil {
		return nil, err
	}
	db, file, err := openFile(path, o)
	if err != nil {
		return nil, err
	}
	if err := checkLayout(db, path); err != nil {
		_ = db.Close()
		return nil, err
	}
	if !o.ReadOnly {
		if err := migrate(db, path); err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	b := newBolt(db, path)
	b.deferDelay = o.DeferDelay
	b.readOnly = o.ReadOnly
	if !o.ReadOnly {
		if b.watch, err = newFileWatch(path, file); err != nil {
			_ = db.Close()
			return nil, err
		}
	}
	b.writes.refuse, b.writes.verify = b.refuseWrite, b.verifyCommit
	if err := b.loadLog(); err != nil {
		_ = db.Close()
		return nil, err
	}
	return b, nil
}

// mustExist fails, naming path, unless a file is there.
func mustExist(path string) error {
	_, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("keystore: open %s: no keystore file there, and none was created: %w", path, err)
	}
	if err != nil {
		return fmt.Errorf("keystore: open %s: %w", path, err)
	}
	return nil
}

// migrate brings a version 1 file to version 2: the log bucket, created
// empty, in one committed transaction. The records stay where they are,
// in bucketRecords, which version 2 reads as before.
func migrate(db *bolt.DB, path string) error {
	var version []byte
	if err := db.View(func(tx *bolt.Tx) error {
		version = append(version, tx.Bucket(bucketMeta).Get(metaVersionKey)...)
		return nil
	}); err != nil {
		return fmt.Errorf("keystore: open %s: %w", path, err)
	}
	if version[0] == formatVersion {
		return nil
	}
	err := guard(path, func() error {
		return db.Update(func(tx *bolt.Tx) error {
			if _, err := tx.CreateBucketIfNotExists(bucketLog); err != nil {
				return err
			}
			return tx.Bucket(bucketMeta).Put(metaVersionKey, []byte{formatVersion})
		})
	})
	if err != nil {
		return fmt.Errorf("keystore: migrate %s to format %d: %w", path, formatVersion, err)
	}
	return nil
}

// ensureFile creates a keystore at path unless something is there already.
func ensureFile(path string, o BoltOptions) error {
	_, err := os.Lstat(path)
	if err == nil {
		return nil // something is there; openFile and checkLayout judge it
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("keystore: open %s: %w", path, err)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, base+".new-*")
	if err != nil {
		return fmt.Errorf("keystore: create %s: %w", path, err)
	}
	tmpPath := tmp.Name()
	defer os.Remove(tmpPath) // after a link, only the temporary name goes
	err = tmp.Chmod(o.Mode)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = initLayout(tmpPath, o)
	}
	if err == nil {
		err = publish(tmpPath, path)
	}
	if err != nil {
		return fmt.Errorf("keystore: create %s: %w", path, err)
	}
	return syncDir(dir)
}

// initLayout writes the buckets and the format marker into the empty file
// at path and commits them.
func initLayout(path string, o BoltOptions) error {
	db, err := bolt.Open(path, o.Mode, &bolt.Options{Timeout: o.Timeout, NoSync: o.NoSync})
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		if err := meta.Put(metaFormatKey, formatMarker); err != nil {
			return err
		}
		if err := meta.Put(metaVersionKey, []byte{formatVersion}); err != nil {
			return err
		}
		for _, name := range [][]byte{bucketRecords, bucketNames, bucketLog} {
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return err
}

// publish gives the finished file at tmp the name path, unless another
// process published one first (then that one is used). A hard link never
// replaces an existing file; a rename is the fallback for file systems
// without links.
func publish(tmp, path string) error {
	err := os.Link(tmp, path)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return nil
	}
	if _, statErr := os.Lstat(path); !errors.Is(statErr, fs.ErrNotExist) {
		return err
	}
	return os.Rename(tmp, path)
}

// syncDir makes a new name in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("keystore: sync dir %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("keystore: sync dir %s: %w", dir, err)
	}
	return nil
}

// openFile opens the existing bbolt file at path, mapping bbolt's errors
// onto the keystore's, and returns it with the file bbolt holds.
func openFile(path string, o BoltOptions) (*bolt.DB, *os.File, error) {
	var file *os.File
	bo := &bolt.Options{
		Timeout:  o.Timeout,
		NoSync:   o.NoSync,
		ReadOnly: o.ReadOnly,
		// Never create or initialise here: ensureFile builds new files
		// elsewhere, so a missing or empty file is not ours, and bbolt must
		// not turn it into an empty database. The file is locked as bbolt
		// locks it, then its pages checked, before bbolt reads a byte.
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			f, err := os.OpenFile(name, flag&^os.O_CREATE, perm)
			if err != nil {
				return nil, err
			}
			if err := admitFile(f, path, o); err != nil {
				_ = f.Close()
				return nil, err
			}
			file = f
			return f, nil
		},
	}
	var db *bolt.DB
	err := guard(path, func() error {
		var err error
		db, err = bolt.Open(path, o.Mode, bo)
		return err
	})
	if err == nil {
		return db, file, nil
	}
	if errors.Is(err, ErrCorrupt) && file != nil {
		// bolt.Open panicked with the file open and locked; release both.
		_ = file.Close()
	}
	return nil, nil, openError(path, o, err)
}

// admitFile locks f as bbolt will and checks its pages (checkPages).
func admitFile(f *os.File, path string, o BoltOptions) error {
	if err := lockFile(f, !o.ReadOnly, o.Timeout); err != nil {
		return err
	}
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if info.Size() == 0 {
		return fmt.Errorf("%w: %s is empty", ErrCorrupt, path)
	}
	return checkPages(f, info.Size(), path, o.AcceptOlderMeta)
}

// openError classifies an error of bolt.Open: lock timeout, system error,
// or a file that is not a sound bbolt file.
func openError(path string, o BoltOptions, err error) error {
	var pathErr *fs.PathError
	var errno syscall.Errno
	switch {
	case errors.Is(err, ErrCorrupt):
		return err
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("%w: %s (waited %s)", ErrLocked, path, o.Timeout)
	case errors.As(err, &pathErr), errors.As(err, &errno):
		return fmt.Errorf("keystore: open %s: %w", path, err)
	default:
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
}

// checkLayout verifies that db is a whole idem keystore of a version this
// build reads.
func checkLayout(db *bolt.DB, path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("keystore: open %s: %w", path, err)
	}
	return guard(path, func() error {
		return db.View(func(tx *bolt.Tx) error {
			if tx.Size() > info.Size() {
				return fmt.Errorf("%w: %s is truncated (%d of %d bytes)", ErrCorrupt, path, info.Size(), tx.Size())
			}
			meta := tx.Bucket(bucketMeta)
			if meta == nil || !bytes.Equal(meta.Get(metaFormatKey), formatMarker) {
				return fmt.Errorf("%w: %s has no idem keystore marker", ErrCorrupt, path)
			}
			v := meta.Get(metaVersionKey)
			if len(v) != 1 || v[0] == 0 || v[0] > formatVersion {
				return fmt.Errorf("%w: %s has unsupported format version %v", ErrCorrupt, path, v)
			}
			if tx.Bucket(bucketRecords) == nil || tx.Bucket(bucketNames) == nil ||
				(v[0] >= 2 && tx.Bucket(bucketLog) == nil) {
				return fmt.Errorf("%w: %s is missing a bucket", ErrCorrupt, path)
			}
			return nil
		})
	})
}
