// Command gcscope runs a Kubernetes garbage-collector engine inside an HTTP server and
// shows its work live. With no cluster flags it boots its own control plane on loopback.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// Every component's stop is bounded; this is the backstop that keeps the promise
		// of exiting within 5 s of a signal whatever hangs.
		<-ctx.Done()
		time.Sleep(4800 * time.Millisecond)
		fmt.Fprintln(os.Stderr, "gcscope: shutdown took longer than 5 s; exiting anyway")
		os.Exit(1)
	}()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	var usage usageError
	switch {
	case err == nil:
	case errors.As(err, &usage):
		fmt.Fprintf(os.Stderr, "gcscope: %v\nRun 'gcscope -h' for the flags.\n", err)
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "gcscope: %v\n", err)
		os.Exit(1)
	}
}
