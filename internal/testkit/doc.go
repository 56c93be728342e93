// Package testkit holds what gcscope's tests share: waiting for a condition, and the
// embedded control plane a package's tests run against.
//
// # Waiting
//
// Tests wait for conditions, never for time: Eventually (EventuallyWithin, EventuallyEvery)
// polls a condition and fails the test naming what never happened; Poll and PollEvery do
// the same for code without a testing.TB; Consistently shows that something does NOT
// happen within a window.
//
// # The embedded control plane
//
// Booting a control plane takes seconds and kube-controller-manager's controllers run only
// once per process, so a package shares one (or a few, by name) between its tests:
//
//	func TestMain(m *testing.M) { testkit.Main(m) }
//
//	func TestX(t *testing.T) {
//		env := testkit.Shared(t, testkit.Options{Controllers: true})
//		env.Client.CoreV1()...
//	}
//
// Shared starts the cluster for the first test that asks and Main stops it once the tests are
// done. A package whose tests read package variables filled at start-up (an engine, a scenario
// player) names those options in Main instead, and fills the variables in Options.Setup:
//
//	func TestMain(m *testing.M) {
//		testkit.Main(m, testkit.Options{Controllers: true, Setup: func(ctx context.Context, e *testkit.Env) error {
//			engine, err = gc.NewForConfig(e.Config, gc.Options{})
//			if err != nil {
//				return err
//			}
//			return e.GoReady(engine.Started(), engine.Run)
//		}})
//	}
//
// A test that needs a cluster of its own (other options, or a cluster it may break) calls
// NewCluster, which stops it when the test ends. Env.Go runs an engine (or anything else)
// until the Env stops, before the control plane does; Env.Cleanup runs before that.
//
// testkit imports cluster and client-go only, never gcscope's engine or server: the internal
// tests of those packages use testkit too, and would otherwise import themselves.
package testkit
