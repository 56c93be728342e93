package main

// The dashboard, in this process: the same engine (shadow mode, run for as long as the
// dashboard is open) and the same server package as the gcscope binary, wired as gcscope
// wires them for an existing cluster, on 127.0.0.1 with a free port. The alternative, to
// exec a gcscope binary, would need that binary installed too, and the full one links the
// embedded control plane (about 200 MB); the wiring here is a screenful.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gcscope/gcscope/gc"
	"github.com/gcscope/gcscope/server"
)

func uiCommand(fs *pflag.FlagSet) func(context.Context, *options, []string) error {
	port := fs.Int("port", 0, "port on 127.0.0.1 to serve the dashboard on (0: a free one)")
	readOnly := fs.Bool("read-only", false, "refuse every delete from the page (otherwise a delete in the page is a real delete, made with your credentials)")
	open := fs.Bool("open", true, "open the dashboard in a browser when one can be opened")
	allContexts := fs.Bool("all-contexts", false, "serve every context of the kubeconfig, one engine each; the page picks one")
	startContexts := fs.String("start-contexts", "opened", "with several contexts: start each engine when the page first opens it (opened) or all at once (all)")
	return func(ctx context.Context, o *options, args []string) error {
		if len(args) > 0 {
			return usageError{fmt.Errorf("ui takes no argument, got %q", args[0])}
		}
		if *port < 0 || *port > 65535 {
			return usageError{fmt.Errorf("--port %d: want 0 to 65535", *port)}
		}
		if *allContexts && len(o.contexts) > 0 {
			return usageError{errors.New("--all-contexts serves every context: drop --context, or name the contexts with --context each")}
		}
		if *startContexts != "opened" && *startContexts != "all" {
			return usageError{fmt.Errorf("--start-contexts %q: want opened or all", *startContexts)}
		}
		several := *allContexts || len(o.contexts) > 1
		var opts server.Options
		var engineDone <-chan struct{} // one context: its engine stopped
		var runErr func() error
		var what string
		if several {
			fl, names, err := startFleet(o, *allContexts, *startContexts == "all")
			if err != nil {
				return err
			}
			defer fl.Stop()
			opts.Clusters, opts.Ready = fl, fl.Ready
			what = fmt.Sprintf("gcscope dashboard for contexts %s (%s is the default; each engine starts when the page first opens it)", strings.Join(names, ", "), names[0])
		} else {
			e, err := prepareEngine(ctx, o, false)
			if err != nil {
				return err
			}
			defer e.session.stop()
			k, s := e.kube, e.session
			opts.Engine, opts.Kube, opts.Deletions, opts.ClusterName = s.engine, k.config, e.deletions, k.context
			opts.Ready = func() error {
				select {
				case <-s.engine.Started():
				default:
					return errors.New("garbage collector syncing its monitors")
				}
				if d := s.engine.SyncState().Discovery; d != "" {
					return errors.New(d)
				}
				return nil
			}
			engineDone, runErr = s.done, func() error { return s.runErr }
			what = fmt.Sprintf("gcscope dashboard for context %q at %s", k.context, k.config.Host)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*port)))
		if err != nil {
			return fmt.Errorf("listen on 127.0.0.1:%d: %v; pick another --port", *port, err)
		}
		defer ln.Close()

		opts.Logger, opts.Version, opts.ReadOnly, opts.Audit, opts.Listen = o.logger(), "kubectl-gcscope "+version, *readOnly, o.stderr, ln.Addr().String()
		handler := server.New(opts)
		serveCtx, stopServe := context.WithCancel(context.Background())
		defer stopServe()
		go handler.Run(serveCtx)
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			srv.Shutdown(sctx)
		}()

		url := "http://" + ln.Addr().String() + "/"
		writes := "deletes in the page are real"
		if *readOnly {
			writes = "read-only"
		}
		fmt.Fprintln(o.stdout, what)
		fmt.Fprintf(o.stdout, "engine in %s mode (it writes nothing; %s); Ctrl-C stops it\n", gc.ModeShadow, writes)
		fmt.Fprintf(o.stdout, "%s\n", url)
		if *open {
			if err := openBrowser(o.getenv, url); err != nil {
				fmt.Fprintf(o.stderr, "no browser opened (%v): open the URL above\n", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-served:
			return fmt.Errorf("http server: %w", err)
		case <-engineDone:
			return fmt.Errorf("garbage collector stopped: %v", runErr())
		}
	}
}

// openBrowser opens url with the desktop's opener, without waiting for the browser. On
// Linux only under a graphical session: without one xdg-open falls back to a text browser
// in this very terminal.
func openBrowser(getenv func(string) string, url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		if getenv("DISPLAY") == "" && getenv("WAYLAND_DISPLAY") == "" {
			return errors.New("no graphical session")
		}
		path, err := exec.LookPath("xdg-open")
		if err != nil {
			return errors.New("xdg-open not found")
		}
		cmd = exec.Command(path, url)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait() // reap it
	return nil
}
