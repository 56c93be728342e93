// Command kubectl-gcscope is gcscope in the terminal, as a kubectl plugin
// (`kubectl gcscope ...`): the ownership tree of an object with each object's
// garbage-collection state, why an object still exists, what a delete would remove, and
// the dashboard. Each answer comes from gcscope's own engine, run in shadow mode (it reads
// and never writes) over the current kubeconfig context. The embedded control plane is
// not linked in.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// backstop is how long the plugin may take to stop after Ctrl-C (the engine's stop is
// bounded by 2 s, the dashboard's shutdown by 1 s).
const backstop = 4 * time.Second

func main() {
	// client-go logs through klog to stderr (a monitor's failing list, for one); the
	// engine reports those itself, in one line each.
	klog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// Every wait honours ctx; this backstop keeps Ctrl-C working whatever hangs.
		<-ctx.Done()
		time.Sleep(backstop)
		fmt.Fprintln(os.Stderr, "interrupted (the engine did not stop in time)")
		os.Exit(exitInterrupted)
	}()
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
