package testkit

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time this process has used so far, user and system (0 if the
// kernel will not say). A benchmark that runs the embedded apiserver and etcd in its own
// process counts their work too: what its subject costs the machine.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
