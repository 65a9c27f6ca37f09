// Package release checks, in its tests, that the published modules of the
// repository can be used by a module outside it: TestOutsideConsumer builds
// a module proxy from the working tree at the release version and consumes
// the modules through it, as a user of the release would.
// TestReleaseScript runs scripts/release, dry and for real, on a throwaway
// copy of the repository.
//
// It is a module of its own that is never published; go.work includes it
// so that scripts/test runs it.
package release
