// Pi 1.x's SessionManager on a session file: open, then build the context, timed apart.
//
//   node pi16-session.mjs FILE [--print]
//
// --print also writes the context to stdout as `JSON.stringify(context, null, 2)` and a newline,
// the bytes `strata context FILE --format pi` prints, so that both processes do the same work and
// the bench can compare what they printed; the figures line then goes to stderr.
//
// PI16_PACKAGE names Pi's package directory (the one holding dist/core/session-manager.js);
// the default is /work/pi16/node_modules/@earendil-works/pi-coding-agent. Only the session
// manager module is loaded, so the timings are of open + buildSessionContext, not of Pi's CLI.
// FILE must be a version 3 session (Pi rewrites older files to migrate them; it never writes a
// current one on open).
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

const pkg = process.env.PI16_PACKAGE ?? "/work/pi16/node_modules/@earendil-works/pi-coding-agent";
const module = join(pkg, "dist", "core", "session-manager.js");
if (!existsSync(module)) {
  console.error(`pi16-session: no ${module} (set PI16_PACKAGE to Pi 1.x's package directory)`);
  process.exit(3);
}
const file = process.argv[2];
const print = process.argv.includes("--print");
if (!file) {
  console.error("usage: node pi16-session.mjs FILE [--print]");
  process.exit(2);
}
const { SessionManager } = await import(pathToFileURL(module).href);
const t0 = performance.now();
const sm = SessionManager.open(file, dirname(file));
const t1 = performance.now();
const ctx = sm.buildSessionContext();
const t2 = performance.now();
if (print) {
  // Waited for: the process must not exit with the pipe half written.
  await new Promise((resolve, reject) =>
    process.stdout.write(JSON.stringify(ctx, null, 2) + "\n", (error) => (error ? reject(error) : resolve())));
}
const figures = JSON.stringify({ openMs: t1 - t0, contextMs: t2 - t1, messages: ctx.messages.length,
  maxRssMB: process.resourceUsage().maxRSS / 1024 });
if (print) console.error(figures);
else console.log(figures);
