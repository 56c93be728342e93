package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// version is the plugin's version, set at link time by the Makefile.
var version = "dev"

// Exit codes.
const (
	exitOK          = 0
	exitError       = 1 // the cluster, the object or the engine said no
	exitUsage       = 2 // a mistake on the command line
	exitInterrupted = 130
)

// usageError is a mistake on the command line (exit code 2).
type usageError struct{ error }

// options are the flags every command takes, as kubectl spells them, and the process's
// surroundings.
type options struct {
	kubeconfig  string
	context     string   // the one context (contexts[0]), "" for the current one
	contexts    []string // --context as given: more than one for ui only
	namespace   string
	as          string
	syncTimeout time.Duration
	verbose     bool
	color       string

	getenv         func(string) string
	stdin          io.Reader // -f -
	stdout, stderr io.Writer
}

// command is one subcommand.
type command struct {
	name, args, summary string
	flags               func(fs *pflag.FlagSet) func(ctx context.Context, o *options, args []string) error
}

var commands = []command{
	{"tree", "KIND/NAME [-n NAMESPACE] [--watch] [-o text|json]",
		"the ownership tree below the object, with each object's garbage-collection state", treeCommand},
	{"why", "KIND/NAME [-n NAMESPACE] [-o text|json]",
		"why the object still exists: the engine's explanation, the chain of blockers, and the command that would release a finalizer hold",
		whyCommand},
	{"predict", "KIND/NAME | TYPE[,TYPE…] -l SELECTOR | -f FILE|DIR|- | --helm-release NAME | --argocd-app NAME [-n NAMESPACE] [--cascade=background|foreground|orphan] [-o text|json]",
		"what deleting the object, or the set (a selector, manifests, a Helm release, an Argo CD Application), would remove, keep and orphan, before you do it (nothing is deleted)", predictCommand},
	{"stuck", "[-n NAMESPACE | -A] [--older-than=DURATION] [-o text|json]",
		"the objects whose deletion started longer ago than --older-than and have not gone, by cause: another controller's finalizer (and who added it), a foreground deletion's blockers, a namespace's content, failing API discovery", stuckCommand},
	{"ui", "[--port N] [--read-only] [--open=false] [--context C ...|--all-contexts]",
		"the gcscope dashboard for this context (or several, one engine each) on 127.0.0.1, engine in shadow mode; opens a browser when it can", uiCommand},
	{"version", "", "print the plugin's version", versionCommand},
}

// run is the plugin from arguments to exit code: it prints answers on stdout, progress
// and one line per error on stderr.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, getenv, stdout, stderr)
	var usage usageError
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp):
		return exitOK
	case ctx.Err() != nil: // Ctrl-C: whatever failed, failed because of it
		fmt.Fprintln(stderr, "interrupted")
		return exitInterrupted
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "error: %s (see 'kubectl gcscope --help')\n", oneLine(err))
		return exitUsage
	default:
		fmt.Fprintf(stderr, "error: %s\n", oneLine(err))
		return exitError
	}
}

func dispatch(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			if c := findCommand(args[1]); c != nil {
				return commandUsage(c, newFlagSet(c, &options{}), stdout)
			}
		}
		overview(stdout)
		return nil
	}
	c := findCommand(args[0])
	if c == nil {
		if strings.HasPrefix(args[0], "-") {
			return usageError{fmt.Errorf("%s: name a command first (tree, why, predict, stuck, ui)", args[0])}
		}
		return usageError{fmt.Errorf("unknown command %q: want tree, why, predict, stuck, ui or version", args[0])}
	}
	o := &options{getenv: getenv, stdin: os.Stdin, stdout: stdout, stderr: stderr}
	fs := newFlagSet(c, o)
	do := c.flags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return commandUsage(c, fs, stdout)
		}
		return usageError{err}
	}
	switch {
	case len(o.contexts) == 1:
		o.context = o.contexts[0]
	case len(o.contexts) > 1 && c.name != "ui":
		return usageError{fmt.Errorf("--context is given %d times: only ui serves several contexts", len(o.contexts))}
	}
	if o.syncTimeout <= 0 {
		return usageError{fmt.Errorf("--sync-timeout %v: want a positive duration", o.syncTimeout)}
	}
	switch o.color {
	case "auto", "always", "never":
	default:
		return usageError{fmt.Errorf("--color %q: want auto, always or never", o.color)}
	}
	return do(ctx, o, fs.Args())
}

func findCommand(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// newFlagSet holds the flags every command takes (kubectl's names) besides c's own, which
// c.flags adds.
func newFlagSet(c *command, o *options) *pflag.FlagSet {
	fs := pflag.NewFlagSet("kubectl gcscope "+c.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by run, in one line
	fs.Usage = func() {}
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringArrayVar(&o.contexts, "context", nil, "the kubeconfig context to use (default: the current context); ui takes it more than once")
	fs.StringVarP(&o.namespace, "namespace", "n", "", "the namespace of the object (default: the context's namespace, else default)")
	fs.StringVar(&o.as, "as", "", "username to impersonate for the requests")
	fs.DurationVar(&o.syncTimeout, "sync-timeout", 2*time.Minute, "how long to wait for the engine to list the cluster before answering with what it has")
	fs.StringVar(&o.color, "color", "auto", "colour the output: auto (when stdout is a terminal and NO_COLOR is unset), always or never")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "log the engine's work on stderr")
	return fs
}

func overview(w io.Writer) {
	fmt.Fprintf(w, "kubectl gcscope: the Kubernetes garbage collector's view of your objects, computed by\n"+
		"gcscope's engine in shadow mode (it reads the cluster and writes nothing).\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nKIND is what kubectl accepts: deploy, deployment, deployments.apps, rs, pod, cm, ...\n"+
		"Every command takes --kubeconfig, --context, -n/--namespace and --as, as kubectl does.\n"+
		"Run 'kubectl gcscope COMMAND --help' for a command's flags.\n")
}

func commandUsage(c *command, fs *pflag.FlagSet, w io.Writer) error {
	fmt.Fprintf(w, "kubectl gcscope %s %s\n\n%s.\n\nFlags:\n%s", c.name, c.args, upperFirst(c.summary), fs.FlagUsages())
	return nil
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func versionCommand(*pflag.FlagSet) func(context.Context, *options, []string) error {
	return func(_ context.Context, o *options, args []string) error {
		if len(args) > 0 {
			return usageError{fmt.Errorf("version takes no argument, got %q", args[0])}
		}
		fmt.Fprintf(o.stdout, "kubectl-gcscope %s\n", version)
		return nil
	}
}

// logger is the engine's logger: silent unless -v.
func (o *options) logger() *slog.Logger {
	if !o.verbose {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(o.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// colored reports whether to colour what goes to w.
func (o *options) colored(w io.Writer) bool {
	switch o.color {
	case "always":
		return true
	case "never":
		return false
	}
	return isTerminal(w) && o.getenv("NO_COLOR") == "" && o.getenv("TERM") != "dumb"
}

// isTerminal reports whether w is a character device (a terminal, not a pipe or file).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// outputFlag adds -o/--output with text and json.
func outputFlag(fs *pflag.FlagSet) *string {
	return fs.StringP("output", "o", "text", "output format: text or json")
}

func checkOutput(format string) error {
	if format != "text" && format != "json" {
		return usageError{fmt.Errorf("--output %q: want text or json", format)}
	}
	return nil
}
