package history

// When the recording stops: a gap it leaves in the recording, and a write that failed
// (a full disk, the size cap) pausing it while the engine runs on.

import (
	"context"
	"fmt"
	"time"
)

// startGap marks the recording as interrupted: what follows is a gap until the next seed.
func (r *Recorder) startGap(missed, reason string) {
	if r.gap == nil && r.seeded {
		r.gap = &Gap{Session: r.session, AfterSeq: r.recordedSeq, Start: r.recordedTime, Reason: reason}
		r.missed = missed
	}
	r.rep = nil
	r.pending = r.pending[:0]
}

// pause stops recording after a failed write: the engine runs on, and the recorder tries
// again every RetryInterval.
func (r *Recorder) pause(err error) {
	r.s.metrics.writeErrors.Inc()
	msg := r.describe(err)
	r.startGap(gapPaused, "recording paused: "+msg)
	r.nextRetry = r.now().Add(r.o.RetryInterval)
	if st := r.s.status.Load(); st.State != StatePaused || st.Message != msg {
		r.s.log.Error("history: recording paused; the engine is not affected", "reason", msg, "retryIn", r.o.RetryInterval)
		r.s.setStatus(Status{State: StatePaused, Message: msg, Session: r.session, Seq: r.recordedSeq})
	}
}

// describe says why a write failed, and what to do.
func (r *Recorder) describe(err error) string {
	retry := fmt.Sprintf("gcscope tries again every %s; the engine is not affected", r.o.RetryInterval)
	if isFull(err) {
		if r.atCap() {
			return fmt.Sprintf("the history database is at its size cap (%s on disk of %s) and dropping the oldest recording did not make room for the next write; raise --history-max-size; %s",
				bytesText(r.s.onDisk()), bytesText(r.s.opts.MaxSize), retry)
		}
		return fmt.Sprintf("the disk holding the history database is full (%v); free some space; %s", err, retry)
	}
	return fmt.Sprintf("writing the history database failed: %v; %s", err, retry)
}

// atCap reports whether a "full" write hit the size bound rather than a full disk: the disk
// still has more room than the bound has left.
func (r *Recorder) atCap() bool {
	capacity := r.s.dbMax
	if capacity <= 0 {
		return false
	}
	used, _ := r.s.used(context.Background())
	free := diskFree(r.s.opts.Dir)
	return free < 0 || free > capacity-used
}

func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
