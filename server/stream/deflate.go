package stream

// The stream's own deflate (?encoding=deflate): a frame is deflated once and the same
// bytes are sent to every client that receives it, as a binary message the page inflates
// (DecompressionStream "deflate-raw"), where permessage-deflate deflates every client's
// copy again (coder/websocket cannot send a message deflated beforehand): at 50 clients
// that was about 70% of the stream's CPU (docs/performance.md, "Churn").

import (
	"bufio"
	"bytes"
	"compress/flate"
	"io"
	"sync"
)

// deflateAtLeast: a smaller frame goes as text, as permessage-deflate leaves it (without
// context takeover, coder/websocket compresses messages of 512 bytes or more).
const deflateAtLeast = 512

// flaters are deflate writers at permessage-deflate's level; each holds about 1 MB.
var flaters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed) // fails only for a level out of range
	return w
}}

// deflated is data as one raw deflate stream, ended (one message inflates on its own).
func deflated(data []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(data)/3 + 64)
	w := flaters.Get().(*flate.Writer)
	w.Reset(&buf)
	w.Write(data) // a bytes.Buffer never fails
	w.Close()
	w.Reset(io.Discard) // the pool holds no reference to buf
	flaters.Put(w)
	return buf.Bytes()
}

// deflatePiece is how much deflated output a large message hands the connection at a
// time: compress/flate writes its output 240 bytes at a time, and the websocket writer
// sends each write as a frame of its own (a 150k-object snapshot went as about 31,000
// frames, and reached the page a second later than undeflated over loopback).
const deflatePiece = 64 << 10

// deflateWriter deflates into w a piece at a time (a large message, a snapshot); Close
// ends the deflate stream and w.
type deflateWriter struct {
	z   *flate.Writer
	out *bufio.Writer
	w   io.WriteCloser
}

func newDeflateWriter(w io.WriteCloser) *deflateWriter {
	out := bufio.NewWriterSize(w, deflatePiece)
	z := flaters.Get().(*flate.Writer)
	z.Reset(out)
	return &deflateWriter{z: z, out: out, w: w}
}

func (d *deflateWriter) Write(p []byte) (int, error) { return d.z.Write(p) }

func (d *deflateWriter) Close() error {
	err := d.z.Close()
	d.z.Reset(io.Discard)
	flaters.Put(d.z)
	if ferr := d.out.Flush(); err == nil {
		err = ferr
	}
	if cerr := d.w.Close(); err == nil {
		err = cerr
	}
	return err
}
