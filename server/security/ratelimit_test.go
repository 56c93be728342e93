package security

import (
	"fmt"
	"testing"
)

// TestFailureLimiterTableIsBounded: the table of addresses stays bounded.
func TestFailureLimiterTableIsBounded(t *testing.T) {
	l := NewFailureLimiter(nil)
	for i := range addrTableSize + 100 {
		done, _ := l.Begin(fmt.Sprintf("10.1.%d.%d", i/256, i%256))
		done(true)
	}
	if n := l.table.len(); n != addrTableSize {
		t.Errorf("address table holds %d, want its bound %d", n, addrTableSize)
	}
}
