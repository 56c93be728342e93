package cluster

import (
	"fmt"
	"io"
	"os"
	"sync"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	logsapi "k8s.io/component-base/logs/api/v1"
)

// The components log through klog, which is process-wide and can be configured only once.
// It is pointed once at componentLog, whose target each Start retargets to its data dir.
var (
	componentLog     = &switchWriter{w: io.Discard}
	componentLogOnce sync.Once
	componentLogErr  error
)

// routeComponentLogs sends the control plane's klog output to path (and to stderr too
// when debug is set), keeping gcscope's own output readable.
func routeComponentLogs(path string, debug bool) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open control-plane log: %w", err)
	}
	var w io.Writer = f
	if debug {
		w = io.MultiWriter(f, os.Stderr)
	}
	componentLog.set(w, f)

	componentLogOnce.Do(func() {
		cfg := logsapi.NewLoggingConfiguration()
		if debug {
			cfg.Verbosity = 2
		}
		opts := &logsapi.LoggingOptions{ErrorStream: componentLog, InfoStream: componentLog}
		componentLogErr = logsapi.ValidateAndApplyWithOptions(cfg, opts, utilfeature.DefaultFeatureGate)
	})
	if componentLogErr != nil {
		return fmt.Errorf("configure control-plane logging: %w", componentLogErr)
	}
	return nil
}

// switchWriter is an io.Writer whose destination can change while writers hold it.
type switchWriter struct {
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *switchWriter) set(w io.Writer, c io.Closer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closer != nil {
		s.closer.Close()
	}
	s.w, s.closer = w, c
}
