package server

// The stream's own deflate (?encoding=deflate): a frame is deflated once and the same
// bytes are sent to every client that receives it, as a binary message the page inflates
// (DecompressionStream "deflate-raw"), where permessage-deflate deflates every client's
// copy again (coder/websocket cannot send a message deflated beforehand): at 50 clients
// that was about 70% of the stream's CPU (docs/performance.md, "Churn").

import (
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

// deflateWriter deflates into w a piece at a time (a large message, a snapshot); Close
// ends the deflate stream and w.
type deflateWriter struct {
	z *flate.Writer
	w io.WriteCloser
}

func newDeflateWriter(w io.WriteCloser) *deflateWriter {
	z := flaters.Get().(*flate.Writer)
	z.Reset(w)
	return &deflateWriter{z: z, w: w}
}

func (d *deflateWriter) Write(p []byte) (int, error) { return d.z.Write(p) }

func (d *deflateWriter) Close() error {
	err := d.z.Close()
	d.z.Reset(io.Discard)
	flaters.Put(d.z)
	if cerr := d.w.Close(); err == nil {
		err = cerr
	}
	return err
}
