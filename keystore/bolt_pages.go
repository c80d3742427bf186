package keystore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
)

// checkPages reads the bbolt file through f, before bbolt reads any of it,
// and refuses it (ErrCorrupt) unless every page bbolt's cursors and
// freelist will trust is sound: the meta pages, the freelist, and the
// page tree of every bucket. bbolt trusts them blindly: a page whose type
// byte turns a leaf into a branch sends a cursor round a cycle of pages
// forever, its stack growing without bound, and a page or free id past
// the end makes a write grow the file to match (terabytes, sparse).
//
// The walk reads each page at most once, through ReadAt (never the
// memory map, so a short file is an error, not a fault), and holds two
// bits a page: its time and memory are bounded by the file's size,
// whatever the bytes. It checks what termination and bounds depend on
// (types, ids, counts, element offsets, overflow, one reference per
// page), not the order of keys, which a damaged file can only make
// lookups miss; records carry their own checksums (codec.go).
//
// A file with one sound and one damaged meta page fails with
// ErrMetaDamaged unless acceptOlderMeta: bbolt would open it as of the
// sound one, silently, which rolls back the last commit when the damaged
// page was the newer (see BoltOptions.AcceptOlderMeta).
func checkPages(f io.ReaderAt, size int64, path string, acceptOlderMeta bool) error {
	m, err := chooseMeta(f, size, path, acceptOlderMeta)
	if err != nil {
		return err
	}
	pf := &pageFile{f: f, path: path, ps: uint64(m.pageSize), hwm: m.hwm}
	if m.hwm > uint64(size)/pf.ps {
		return fmt.Errorf("%w: %s is truncated (%d of %d bytes)", ErrCorrupt, path, size, m.hwm*pf.ps)
	}
	if m.hwm < 4 || m.root < 2 || m.root >= m.hwm {
		return pf.corrupt("meta page (transaction %d) has root page %d of %d pages", m.txid, m.root, m.hwm)
	}
	if m.freelist == noFreelist {
		return pf.corrupt("file has no freelist page; idem keystores always write one")
	}
	pf.used = newPageSet(m.hwm)
	pf.free = newPageSet(m.hwm)
	pf.used.add(0)
	pf.used.add(1)
	if err := pf.readFreelist(m.freelist); err != nil {
		return err
	}
	return pf.walk(m.root)
}

// bbolt's on-disk layout (go.etcd.io/bbolt/internal/common), in the
// byte order of the machine that wrote it.
const (
	pageHeaderSize  = 16 // id u64, flags u16, count u16, overflow u32
	pageElementSize = 16 // branch: pos, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32
	bucketHeader    = 16 // root pgid u64, sequence u64

	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	freelistPageFlag = 0x10
	bucketLeafFlag   = 0x01

	boltMagic   = 0xED0CDAED
	boltVersion = 2
	metaSumSize = 56 // the meta fields the checksum covers
	noFreelist  = ^uint64(0)
)

var ne = binary.NativeEndian

// metaPage is what checkPages needs of a meta page.
type metaPage struct {
	valid                     bool
	pageSize                  uint32
	root, freelist, hwm, txid uint64
}

// parseMeta reads the meta page in buf (a page's first bytes) as bbolt's
// Meta.Validate does: magic, version, checksum.
func parseMeta(buf []byte) metaPage {
	if len(buf) < pageHeaderSize+metaSumSize+8 {
		return metaPage{}
	}
	b := buf[pageHeaderSize:]
	h := fnv.New64a()
	h.Write(b[:metaSumSize])
	return metaPage{
		valid: ne.Uint32(b[0:]) == boltMagic && ne.Uint32(b[4:]) == boltVersion &&
			ne.Uint64(b[metaSumSize:]) == h.Sum64(),
		pageSize: ne.Uint32(b[8:]),
		root:     ne.Uint64(b[16:]),
		freelist: ne.Uint64(b[32:]),
		hwm:      ne.Uint64(b[40:]),
		txid:     ne.Uint64(b[48:]),
	}
}

// readMetaAt parses the meta page at off, or returns an invalid one.
func readMetaAt(f io.ReaderAt, off int64) metaPage {
	var buf [pageHeaderSize + metaSumSize + 8]byte
	if _, err := f.ReadAt(buf[:], off); err != nil {
		return metaPage{}
	}
	return parseMeta(buf[:])
}

// chooseMeta returns the meta page bbolt opens the file as: the sound one
// of the higher transaction (db.meta). The page size comes from a sound
// meta page, found as bbolt's getPageSize finds it.
func chooseMeta(f io.ReaderAt, size int64, path string, acceptOlderMeta bool) (metaPage, error) {
	m0 := readMetaAt(f, 0)
	ps, found := uint64(m0.pageSize), m0.valid
	for i := 0; !found && i <= 14; i++ {
		pos := int64(1024) << i
		if pos >= size-1024 {
			break
		}
		if m := readMetaAt(f, pos); m.valid {
			ps, found = uint64(m.pageSize), true
		}
	}
	if !found {
		return metaPage{}, fmt.Errorf("%w: %s has no sound bbolt meta page", ErrCorrupt, path)
	}
	if ps < 1024 || ps > 1<<24 || ps&(ps-1) != 0 {
		return metaPage{}, fmt.Errorf("%w: %s: page size %d", ErrCorrupt, path, ps)
	}
	m1 := readMetaAt(f, int64(ps))
	for i, m := range []metaPage{m0, m1} {
		if m.valid && uint64(m.pageSize) != ps {
			return metaPage{}, fmt.Errorf("%w: %s: meta page %d has page size %d, not %d", ErrCorrupt, path, i, m.pageSize, ps)
		}
	}
	switch {
	case !m0.valid && !m1.valid:
		return metaPage{}, fmt.Errorf("%w: %s has no sound bbolt meta page at page size %d", ErrCorrupt, path, ps)
	case m0.valid && m1.valid:
		if m1.txid > m0.txid {
			return m1, nil
		}
		return m0, nil
	case !acceptOlderMeta:
		damaged, sound := 1, m0
		if !m0.valid {
			damaged, sound = 0, m1
		}
		return metaPage{}, fmt.Errorf("%w: %w: %s: meta page %d is damaged; the file reads as of transaction %d on meta page %d, "+
			"which loses the last commit if the damaged page was the newer. Inspect it opened read-only with AcceptOlderMeta "+
			"(idem intents list --accept-older-meta), then restore a backup or accept the older state",
			ErrCorrupt, ErrMetaDamaged, path, damaged, sound.txid, 1-damaged)
	case m0.valid:
		return m0, nil
	default:
		return m1, nil
	}
}

// pageFile is the state of one checkPages walk.
type pageFile struct {
	f    io.ReaderAt
	path string
	ps   uint64 // page size
	hwm  uint64 // pages in use: ids are below it
	used pageSet
	free pageSet
	// buf holds the last read, elems the elements of the page walked.
	buf, elems []byte
}

func (pf *pageFile) corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrCorrupt, pf.path, fmt.Sprintf(format, args...))
}

// read returns n bytes at off within page id (n, off within its span).
func (pf *pageFile) read(id, off, n uint64) ([]byte, error) {
	if uint64(cap(pf.buf)) < n {
		pf.buf = make([]byte, n)
	}
	b := pf.buf[:n]
	if _, err := pf.f.ReadAt(b, int64(id*pf.ps+off)); err != nil {
		return nil, pf.corrupt("page %d: %v", id, err)
	}
	return b, nil
}

// header reads the header of page id, checks its id, type and extent, and
// marks its pages used. It returns flags, count and its span in bytes.
func (pf *pageFile) header(id uint64, want uint16, what string) (flags uint16, count, span uint64, err error) {
	if id < 2 || id >= pf.hwm {
		return 0, 0, 0, pf.corrupt("%s page %d is out of range (%d pages)", what, id, pf.hwm)
	}
	// The whole first page: its elements come with the header, most often.
	h, err := pf.read(id, 0, pf.ps)
	if err != nil {
		return 0, 0, 0, err
	}
	flags, count = ne.Uint16(h[8:]), uint64(ne.Uint16(h[10:]))
	overflow := uint64(ne.Uint32(h[12:]))
	if ne.Uint64(h) != id {
		return 0, 0, 0, pf.corrupt("page %d says it is page %d", id, ne.Uint64(h))
	}
	// want is the set of the types allowed here; a page has exactly one.
	if flags&want == 0 || (flags != branchPageFlag && flags != leafPageFlag && flags != freelistPageFlag) {
		return 0, 0, 0, pf.corrupt("%s page %d has type %#x", what, id, flags)
	}
	if overflow >= pf.hwm-id {
		return 0, 0, 0, pf.corrupt("page %d overflows past the last page (%d more)", id, overflow)
	}
	for p := id; p <= id+overflow; p++ {
		if pf.used.has(p) {
			return 0, 0, 0, pf.corrupt("page %d is reached twice", p)
		}
		if pf.free.has(p) {
			return 0, 0, 0, pf.corrupt("page %d is both free and in use", p)
		}
		pf.used.add(p)
	}
	return flags, count, (overflow + 1) * pf.ps, nil
}

// readFreelist checks the freelist page and marks the pages it frees.
func (pf *pageFile) readFreelist(id uint64) error {
	_, count, span, err := pf.header(id, freelistPageFlag, "freelist")
	if err != nil {
		return err
	}
	start := uint64(pageHeaderSize)
	if count == 0xFFFF { // the count is the first id (freelist.write)
		b, err := pf.read(id, start, 8)
		if err != nil {
			return err
		}
		count, start = ne.Uint64(b), start+8
	}
	if count > (span-start)/8 {
		return pf.corrupt("freelist page %d claims %d ids", id, count)
	}
	const chunk = 4096
	for done := uint64(0); done < count; {
		n := min(count-done, chunk)
		b, err := pf.read(id, start+done*8, n*8)
		if err != nil {
			return err
		}
		for i := range n {
			p := ne.Uint64(b[i*8:])
			switch {
			case p < 2 || p >= pf.hwm:
				return pf.corrupt("freelist frees page %d of %d", p, pf.hwm)
			case pf.free.has(p):
				return pf.corrupt("freelist frees page %d twice", p)
			case pf.used.has(p):
				return pf.corrupt("freelist frees page %d, which is in use", p)
			}
			pf.free.add(p)
		}
		done += n
	}
	return nil
}

// walk checks the page tree of the bucket rooted at root and of every
// bucket within it, iteratively: each page is reached once (header), so
// the work is bounded by the pages in use.
func (pf *pageFile) walk(root uint64) error {
	stack := []uint64{root}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		flags, count, span, err := pf.header(id, branchPageFlag|leafPageFlag, "tree")
		if err != nil {
			return err
		}
		if pageHeaderSize+count*pageElementSize > span {
			return pf.corrupt("page %d claims %d elements", id, count)
		}
		if flags == branchPageFlag && count == 0 {
			return pf.corrupt("branch page %d is empty", id)
		}
		var elems []byte
		if end := pageHeaderSize + count*pageElementSize; end <= pf.ps {
			elems = append(pf.elems[:0], pf.buf[pageHeaderSize:end]...) // read with the header
		} else if elems, err = pf.read(id, pageHeaderSize, count*pageElementSize); err != nil {
			return err
		} else {
			elems = append(pf.elems[:0], elems...)
		}
		pf.elems = elems // pf.buf is reused below
		for i := range count {
			e := elems[i*pageElementSize:]
			at := pageHeaderSize + i*pageElementSize // where the element's offsets count from
			if flags == branchPageFlag {
				if at+uint64(ne.Uint32(e[0:]))+uint64(ne.Uint32(e[4:])) > span {
					return pf.corrupt("branch page %d: element %d lies outside the page", id, i)
				}
				stack = append(stack, ne.Uint64(e[8:]))
				continue
			}
			pos, ksize, vsize := uint64(ne.Uint32(e[4:])), uint64(ne.Uint32(e[8:])), uint64(ne.Uint32(e[12:]))
			if at+pos+ksize+vsize > span {
				return pf.corrupt("leaf page %d: element %d lies outside the page", id, i)
			}
			if ne.Uint32(e[0:])&bucketLeafFlag == 0 {
				continue
			}
			v, err := pf.read(id, at+pos+ksize, vsize)
			if err != nil {
				return err
			}
			if stack, err = pf.bucket(id, v, stack); err != nil {
				return err
			}
		}
	}
	return nil
}

// bucket checks the bucket value v found on page id: a root page, added
// to stack, or an inline page, checked whole (with the buckets within).
func (pf *pageFile) bucket(id uint64, v []byte, stack []uint64) ([]uint64, error) {
	if len(v) < bucketHeader {
		return stack, pf.corrupt("page %d: bucket value of %d bytes", id, len(v))
	}
	if root := ne.Uint64(v); root != 0 {
		return append(stack, root), nil
	}
	p := v[bucketHeader:]
	if len(p) < pageHeaderSize || ne.Uint16(p[8:]) != leafPageFlag {
		return stack, pf.corrupt("page %d: inline bucket is not a leaf page", id)
	}
	count := uint64(ne.Uint16(p[10:]))
	span := uint64(len(p))
	if pageHeaderSize+count*pageElementSize > span {
		return stack, pf.corrupt("page %d: inline bucket claims %d elements", id, count)
	}
	var inner [][]byte
	for i := range count {
		e := p[pageHeaderSize+i*pageElementSize:]
		at := pageHeaderSize + i*pageElementSize
		pos, ksize, vsize := uint64(ne.Uint32(e[4:])), uint64(ne.Uint32(e[8:])), uint64(ne.Uint32(e[12:]))
		if at+pos+ksize+vsize > span {
			return stack, pf.corrupt("page %d: inline bucket element %d lies outside it", id, i)
		}
		if ne.Uint32(e[0:])&bucketLeafFlag != 0 {
			inner = append(inner, append([]byte(nil), p[at+pos+ksize:at+pos+ksize+vsize]...))
		}
	}
	var err error
	for _, iv := range inner { // each strictly shorter than v: this ends
		if stack, err = pf.bucket(id, iv, stack); err != nil {
			return stack, err
		}
	}
	return stack, nil
}

// pageSet is a set of page ids below a bound, a bit each.
type pageSet []uint64

func newPageSet(n uint64) pageSet   { return make(pageSet, (n+63)/64) }
func (s pageSet) has(p uint64) bool { return s[p/64]&(1<<(p%64)) != 0 }
func (s pageSet) add(p uint64)      { s[p/64] |= 1 << (p % 64) }

// ErrMetaDamaged: one of the two meta pages of a bbolt keystore file is
// damaged. bbolt would open the file as of the other one, silently; when
// the damaged page held the newer transaction, that drops the last commit
// (intents acknowledged as stored would be missing, and paid again). So
// OpenBolt refuses such a file, with an error matching both ErrCorrupt
// and ErrMetaDamaged, unless BoltOptions.AcceptOlderMeta is set. Open it
// read-only with that option to see what it holds, then restore a backup
// or accept the older state (the next commit rewrites the damaged page).
var ErrMetaDamaged = errors.New("keystore: a meta page is damaged; the file would open as of the other one")
