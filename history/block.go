package history

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// A block is a run of consecutive events of one session, stored as one row: the keys
// (uncompressed, a few bytes per event, read to filter) and the body (the events' JSON,
// one after another, deflated), read only when a key matches.
//
// Keys: a format byte, the event count, then per event: seq - the block's first seq
// (uvarint), time - the block's first time (varint, ns), the type, queue, verb, op and
// result codes (a byte each), its cascade's id (uvarint, 0 for none; not in format 1),
// the length of its JSON (uvarint), and its objects (a count and the ids, uvarints).

const keysFormat = 2

// block is a block being built, or read back.
type block struct {
	pos       int64 // position of its first event in the recording
	session   int64
	firstSeq  uint64
	lastSeq   uint64
	firstTime int64
	lastTime  int64
	mask      uint64
	deletes   int // successful delete actions (timeline.go)
	errors    int // failed actions
	retries   int // conflicts retried
	keys      []key
	body      []byte  // the events' JSON, inflated
	ids       []int64 // the keys' objects, one after another
}

// add appends one event's key and JSON.
func (b *block) add(k key, js []byte) {
	b.body = append(b.body, js...)
	b.added(k, len(js))
}

// added appends the key of an event whose JSON, n bytes, was just written to the body.
func (b *block) added(k key, n int) {
	if len(b.keys) == 0 {
		b.firstSeq, b.firstTime, b.lastTime = k.seq, k.time, k.time
	}
	b.lastSeq, b.lastTime = k.seq, max(b.lastTime, k.time)
	k.bodyLen = n
	b.keys = append(b.keys, k)
	b.mask |= k.mask()
	if k.verb == deleteCode && (k.result == okCode || k.result == shadowCode) {
		b.deletes++
	}
	switch k.result {
	case errorCode:
		b.errors++
	case retryCode:
		b.retries++
	}
}

// Write appends p to the body: events are encoded straight into it.
func (b *block) Write(p []byte) (int, error) {
	b.body = append(b.body, p...)
	return len(p), nil
}

func (b *block) reset() {
	b.keys, b.body, b.ids, b.mask, b.deletes, b.errors, b.retries = b.keys[:0], b.body[:0], b.ids[:0], 0, 0, 0, 0
}

// encodeKeys writes the keys record.
func (b *block) encodeKeys(dst []byte) []byte {
	dst = append(dst[:0], keysFormat)
	dst = binary.AppendUvarint(dst, uint64(len(b.keys)))
	for i := range b.keys {
		k := &b.keys[i]
		dst = binary.AppendUvarint(dst, k.seq-b.firstSeq)
		dst = binary.AppendVarint(dst, k.time-b.firstTime)
		dst = append(dst, k.typ, k.queue, k.verb, k.op, k.result)
		dst = binary.AppendUvarint(dst, uint64(k.cascade))
		dst = binary.AppendUvarint(dst, uint64(k.bodyLen))
		dst = binary.AppendUvarint(dst, uint64(len(k.objects)))
		for _, id := range k.objects {
			dst = binary.AppendUvarint(dst, uint64(id))
		}
	}
	return dst
}

var errCorrupt = errors.New("history: corrupt block")

// decodeKeys reads a keys record of a block whose first seq and time are given.
func decodeKeys(data []byte, firstSeq uint64, firstTime int64) ([]key, error) {
	if len(data) == 0 || data[0] != 1 && data[0] != keysFormat {
		return nil, fmt.Errorf("%w: unknown keys format", errCorrupt)
	}
	withCascade := data[0] >= 2
	r := keyReader{data: data[1:]}
	n := r.uvarint()
	if r.err != nil || n > uint64(len(data)) {
		return nil, fmt.Errorf("%w: bad event count", errCorrupt)
	}
	keys := make([]key, n)
	for i := range keys {
		k := &keys[i]
		k.seq = firstSeq + r.uvarint()
		k.time = firstTime + r.varint()
		k.typ, k.queue, k.verb, k.op, k.result = r.byte(), r.byte(), r.byte(), r.byte(), r.byte()
		if withCascade {
			k.cascade = int64(r.uvarint())
		}
		k.bodyLen = int(r.uvarint())
		nobj := r.uvarint()
		if nobj > uint64(len(r.data)) {
			return nil, fmt.Errorf("%w: bad object count", errCorrupt)
		}
		k.objects = make([]int64, nobj)
		for j := range k.objects {
			k.objects[j] = int64(r.uvarint())
		}
		if r.err != nil {
			return nil, r.err
		}
	}
	return keys, nil
}

type keyReader struct {
	data []byte
	err  error
}

func (r *keyReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.data)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.data = r.data[n:]
	return v
}

func (r *keyReader) varint() int64 {
	v, n := binary.Varint(r.data)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.data = r.data[n:]
	return v
}

func (r *keyReader) byte() byte {
	if len(r.data) == 0 {
		r.fail()
		return 0
	}
	c := r.data[0]
	r.data = r.data[1:]
	return c
}

func (r *keyReader) fail() {
	if r.err == nil {
		r.err = fmt.Errorf("%w: keys end early", errCorrupt)
	}
	r.data = nil
}

// compressor deflates bodies and checkpoints, reusing its state (a flate writer costs
// hundreds of kilobytes to make).
type compressor struct {
	w   *flate.Writer
	buf bytes.Buffer
}

func newCompressor() *compressor {
	w, _ := flate.NewWriter(nil, flate.BestSpeed) // never fails for a valid level
	return &compressor{w: w}
}

// deflate returns p deflated; the result is valid until the next call.
func (c *compressor) deflate(p []byte) []byte {
	c.buf.Reset()
	c.w.Reset(&c.buf)
	c.w.Write(p) // a bytes.Buffer does not fail
	c.w.Close()
	return c.buf.Bytes()
}

// inflate returns data inflated; sizeHint is the expected size (0: unknown).
func inflate(data []byte, sizeHint int) ([]byte, error) {
	r := flate.NewReader(bytes.NewReader(data))
	defer r.Close()
	out := bytes.NewBuffer(make([]byte, 0, max(sizeHint, 4*len(data))))
	if _, err := io.Copy(out, r); err != nil {
		return nil, fmt.Errorf("%w: %v", errCorrupt, err)
	}
	return out.Bytes(), nil
}
