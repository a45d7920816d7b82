// The V8 flags the daemon runs with, wherever it is started: the `attribution` command's shebang, `npm start`
// and the image's ENTRYPOINT spell them out (test/operations/launch-flags.test.ts checks that each does), and
// the benches start it with them as an operator would.
//
// --max-semi-space-size=32: young-generation semi-spaces of up to 32 MB instead of V8's 16. A dense backfill's
// main thread allocates fast (answers parsed, rows built for the commit thread), and with 16 MB it scavenged
// so often that the daemon spent ~10% more CPU per attribution (bench/LOG.md, ninth session). V8 grows the
// young generation only while allocation needs it, so a sparse chain keeps a small one; 48 and 64 MB raised the
// dense peak RSS by ~130–180 MiB for no further gain.
export const DAEMON_NODE_FLAGS = ['--max-semi-space-size=32']
