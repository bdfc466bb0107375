// Package apptest runs loam Apps, and the parts of them, inside tests.
//
// A Host is a machine of the test's own: an in-memory Network and a
// temporary directory. Its Network's connections buffer like TCP's and
// honour deadlines, so TLS and HTTP/2 run over them, and every wait on
// them is durable inside a testing/synctest bubble: an App test in a
// bubble lets a minute pass in an instant. Partition makes an address go
// silent without closing anything, as a dropped network does.
//
// Start runs an App with app.Run on such a Host, as a Process whose
// environment, arguments and signals the test chooses, reporting to a
// Telemetry kept in memory; the returned App signals it, waits for its
// exit code and hands back the Setup its Init was given. NewCA issues the
// certificates a test's servers and clients need, and NewTelemetry gives
// any test in-memory OpenTelemetry providers to read back.
//
// A test in a bubble:
//
//	func TestApp(t *testing.T) {
//		synctest.Test(t, func(t *testing.T) {
//			a := apptest.Start(t, Init,
//				apptest.WithEnv(map[string]string{"CONTROLLER_NAME": "memcached"}),
//				apptest.WithFiles(map[string][]byte{"serviceaccount/token": []byte("t0k3n")}),
//			)
//			time.Sleep(time.Minute) // on the bubble's clock: instantly
//			synctest.Wait()
//			// ... read a.Stdout(), a.Telemetry().Spans(), dial a.Host() ...
//			a.Signal(syscall.SIGTERM)
//			require.Equal(t, 0, a.Wait())
//		})
//	}
//
// Nothing in apptest reaches the real network or environment; it reads and
// writes the disk only inside the temporary directories of the test.
package apptest
