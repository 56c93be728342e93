package httpapi

// HeadOf keeps the first Max bytes written to it: the start of an answer, teed off as it
// is written, for the audit line's error message.
type HeadOf struct {
	B   []byte
	Max int
}

func (h *HeadOf) Write(p []byte) (int, error) {
	if room := h.Max - len(h.B); room > 0 {
		h.B = append(h.B, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
