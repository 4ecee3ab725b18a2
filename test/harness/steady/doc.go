// Package steady is the steady client of the lifecycle tests: one long-running
// process inside a Pod's network namespace that, for every host it is given,
// asks the cluster DNS for the host (one try, a 2 s timeout) and sends an HTTP
// request to the address it got, every 20 ms, and reports each outcome as one
// JSON line. A test reads the lines and decides which outcome was a failure
// for the operation it ran at that moment: what the right DNS answer is changes
// with the test's story.
//
// The process is the steady command (cmd/steady), a small plain binary
// started under nsenter(1) with the Pod's network namespace and the
// configuration in its environment. It is not the race-instrumented test
// binary: at about 200 operations/s on 2 cores that binary's instrumentation
// cost CPU the cluster under test needed. One exec per request tops out near
// 12 requests/s; this process keeps the pace.
package steady
